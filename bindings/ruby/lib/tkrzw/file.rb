# frozen_string_literal: true

module Tkrzw
  # A file read and written at offsets, as the reference's Tkrzw::File,
  # over kuradb's file layer (Kuradb::File): the reference's "file" classes
  # (MemoryMapParallelFile, MemoryMapAtomicFile, PositionalParallelFile,
  # PositionalAtomicFile), block_size and access_options (direct I/O, sync,
  # padding, the page cache) all apply. DBM#export_to_flat_records and
  # #export_keys_as_lines write at its end; #import_from_flat_records
  # reads it from the start.
  class File
    include Calls

    # What the reference raises for a method of a file that is not open.
    NOT_OPENED = "not opened file"
    private_constant :NOT_OPENED

    def initialize
      @file = nil
    end

    # Closes the file if it is open.
    def destruct
      close if @file
      nil
    end

    # Opens the file at +path+. Parameters: truncate, no_create, no_wait,
    # no_lock, sync_hard (a hard synchronization at close), the file
    # class (MemoryMapParallelFile by default, as the reference's) and its
    # options (file, block_size, access_options, ...),
    # encoding (of the Strings #read answers) and concurrent.
    def open(path, writable, params = nil, **keywords)
      return Status.new(Status::PRECONDITION_ERROR, "opened file") if @file

      params = TkrzwParams.given(params, keywords)
      params = params.transform_keys(&:to_sym)
      encoding = params.delete(:encoding)
      encoding &&= Encoding.find(encoding.to_s).name
      concurrent = Kuradb::Params.flag(params.delete(:concurrent))
      # The reference's default class.
      params[:file] ||= "MemoryMapParallelFile"
      # The reference waits for another process's lock unless told no_wait.
      params[:no_wait] = false unless params.key?(:no_wait)
      file = Kuradb::File.new
      file._open(path.to_s, writable ? true : false, Kuradb::Params.pairs(params), encoding, concurrent)
      @file = file
      Status.new
    rescue Kuradb::Error, TypeError, ArgumentError => e
      StatusOf.status_of(e)
    end

    def close
      file = opened
      outcome = call { file.close }
      @file = nil unless file.open?
      outcome
    end

    # The +size+ bytes at +off+, or nil (INFEASIBLE_ERROR past the end).
    def read(off, size, status = nil)
      data = opened.read(Integer(off), Integer(size))
      StatusOf.report(status, Status.new)
      data
    rescue Kuradb::Error, TypeError, ArgumentError, RangeError => e
      StatusOf.report(status, StatusOf.status_of(e))
      nil
    end

    # Writes +data+ at +off+, extending the file if it ends past the end.
    def write(off, data)
      call { opened.write(Integer(off), str(data)) }
    end

    # Writes +data+ at the end; answers the offset it went to, or nil.
    def append(data, status = nil)
      offset = opened.append(str(data))
      StatusOf.report(status, Status.new)
      offset
    rescue Kuradb::Error => e
      StatusOf.report(status, StatusOf.status_of(e))
      nil
    end

    # Sets the size, cutting the file or extending it with zeros.
    def truncate(size)
      call { opened.truncate(Integer(size)) }
    end

    # Hands written data to the OS, and to the device with +hard+. The
    # whole file is synchronized, whatever the range +off+ and +size+
    # name (more than the range asks, never less).
    def synchronize(hard, _off = 0, _size = 0)
      call { opened._synchronize(hard ? true : false) }
    end

    # The size in bytes, or nil if not open.
    def get_size
      @file&.size
    end

    # The path, or nil if not open.
    def get_path
      @file&.path
    end

    # The lines (without line feeds) that +mode+ matches with +pattern+:
    # "contain", "begin", "end", "regex", "edit", "editbin",
    # "containcase", "containword", "containcaseword"; at most +capacity+
    # (0: all). An unknown mode raises StatusException.
    def search(mode, pattern, capacity = 0)
      opened._search(mode.to_s, str(pattern), Integer(capacity))
    rescue Kuradb::Error => e
      raise StatusException, StatusOf.status_of(e)
    end

    def to_s
      return "#<Tkrzw::File:(unopened)>" unless @file

      "#<Tkrzw::File:#{@file.class_name}:#{@file.path.inspect}:#{@file.size}>"
    end

    alias inspect to_s

    # What the DBM methods write into or read: the Kuradb::File of a
    # Tkrzw::File, or a path given as a String (a new file there).
    def self.target(file)
      return file.send(:opened) if file.is_a?(File)
      return file.to_path if file.respond_to?(:to_path)
      return file if file.is_a?(String)

      raise TypeError, "a flat record file must be a Tkrzw::File or a path, not #{file.class}"
    end

    private

    def opened
      @file or raise NOT_OPENED
    end

    # Offsets and sizes out of range (RangeError) are a Status too.
    def call(&block)
      super(RangeError, &block)
    end
  end

  # A text file searched by lines, as the reference's older Tkrzw::TextFile
  # (its current versions search with File#search): open(path) for
  # reading, search(mode, pattern, capacity = 0, utf = false), close.
  class TextFile
    def initialize
      @file = File.new
    end

    def open(path)
      @file.open(path, false)
    end

    def close
      @file.close
    end

    # As File#search; without +utf+, "edit" counts bytes ("editbin").
    def search(mode, pattern, capacity = 0, utf = false)
      mode = "editbin" if mode.to_s == "edit" && !utf
      @file.search(mode, pattern, capacity)
    end

    def destruct
      @file.destruct
    end

    def to_s
      "#<Tkrzw::TextFile:#{@file.get_path.inspect}>"
    end

    alias inspect to_s
  end
end
