# frozen_string_literal: true

module Kuradb
  # A file of kuradb's file layer, read and written at offsets by any
  # number of threads:
  #
  #   Kuradb::File.open("data.bin", true, file: "pos-para", block_size: 4096,
  #                     access_options: "direct") do |f|
  #     off = f.append("hello")      # => 0
  #     f.read(off, 5)               # => "hello"
  #   end
  #
  # Parameters: truncate, no_create, no_wait, no_lock, sync_hard (a hard
  # synchronization at close), and the file layer's: file (mmap-para,
  # mmap-atom, pos-para, pos-atom or the reference's class names),
  # block_size, access_options (direct, sync, padding, pagecache),
  # alloc_init_size, head_buffer_size, page_cache_capacity, ...; plus
  # encoding: and concurrent: as for DBM.open. An unknown parameter raises
  # InvalidArgumentError. Reading past the end raises InfeasibleError.
  class File
    # File.open(path, writable = false, **params) opens (or creates) the
    # file; with a block, yields it and closes it when the block ends,
    # answering the block's value.
    extend Opening

    # Opens this (closed) file object; see File.open.
    def open(path, writable = false, **params)
      encoding = params.delete(:encoding) || params.delete("encoding")
      encoding &&= Encoding.find(encoding.to_s).name
      concurrent = params.key?(:concurrent) ? params.delete(:concurrent) : params.delete("concurrent")
      _open(path.to_s, writable ? true : false, Params.pairs(params), encoding, Params.flag(concurrent))
      self
    end

    # Hands written data to the OS, and to the device with +hard+.
    def synchronize(hard = false)
      _synchronize(hard ? true : false)
      self
    end

    # The lines that +mode+ ("contain", "begin", "end", "regex", "edit",
    # "editbin", ...) matches with +pattern+, at most +capacity+ (0: all).
    def search(mode, pattern, capacity = 0)
      _search(mode.to_s, pattern, capacity)
    end

    def inspect
      return "#<#{self.class.name} (closed)>" unless open?

      "#<#{self.class.name} #{class_name} path=#{path.inspect} size=#{size}>"
    end
  end
end
