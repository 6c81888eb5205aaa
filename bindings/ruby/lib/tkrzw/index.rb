# frozen_string_literal: true

module Tkrzw
  # Secondary index, as the reference's Tkrzw::Index, over Kuradb::Index:
  # a file index (a tree file of pairs) for a path, an index in memory for
  # an empty one. +key_comparator+ takes the reference's pair comparators
  # (PairLexicalKeyComparator by default, PairDecimalKeyComparator, ...).
  # Keys and values that are not Strings are stored as their to_s.
  class Index
    include Calls

    # What the reference raises for a method of an index that is not open.
    NOT_OPENED = "not opened index"
    private_constant :NOT_OPENED

    def initialize
      @index = nil
    end

    # Closes the index if it is open.
    def destruct
      close if @index
      nil
    end

    def open(path, writable, params = nil, **keywords)
      return Status.new(Status::PRECONDITION_ERROR, "opened index") if @index

      params = TkrzwParams.given(params, keywords)
      @index = Kuradb::Index.open(path.to_s, writable, **TkrzwParams.open(path, params))
      Status.new
    rescue Kuradb::Error, TypeError, ArgumentError => e
      StatusOf.status_of(e)
    end

    def close
      index = opened
      outcome = call { index.close }
      @index = nil unless index.open?
      outcome
    end

    # Whether the pair (+key+, +value+) is there; without +value+, whether
    # +key+ has any value.
    def include?(key, value = nil)
      return opened.check(str(key), str(value)) unless value.nil?

      !opened.get_values(str(key), 1).empty?
    rescue Kuradb::Error
      false
    end

    # The values of +key+ in order, at most +max+ (0: all); [] on failure.
    def get_values(key, max = 0)
      opened.get_values(str(key), max)
    rescue Kuradb::Error, TypeError, ArgumentError
      []
    end

    def add(key, value)
      call { opened.add(str(key), str(value)) }
    end

    # NOT_FOUND_ERROR if the pair is not there.
    def remove(key, value)
      call do
        raise Kuradb::NotFoundError, "not found: no such record" unless opened.remove(str(key), str(value))
      end
    end

    # The number of pairs, or 0 on failure.
    def count
      opened.count
    rescue Kuradb::Error
      0
    end

    # The index file's path, or "" for an index in memory or on failure.
    def file_path
      opened.path.to_s
    rescue Kuradb::Error
      ""
    end

    def clear
      call { opened.clear }
    end

    def rebuild
      call { opened.rebuild }
    end

    def synchronize(hard)
      call { opened.synchronize(hard) }
    end

    def open?
      !@index.nil?
    end

    def writable?
      open? && @index.writable?
    end

    def make_iterator
      IndexIterator.new(self)
    end

    # Yields every pair as (key, value), in order.
    def each(&block)
      opened.each(&block)
      nil
    end

    def to_s
      return "#<Tkrzw::Index:(unopened)>" unless @index

      "#<Tkrzw::Index:#{file_path.inspect}:#{count}>"
    end

    alias inspect to_s

    # The number of pairs, or 0 on failure.
    def to_i
      count
    end

    private

    def opened
      @index or raise NOT_OPENED
    end
  end

  # A cursor over an Index's pairs, as the reference's Tkrzw::IndexIterator.
  class IndexIterator
    def initialize(index)
      @cursor = index.send(:opened).cursor
    end

    def destruct
      nil
    end

    def first
      @cursor.first
      nil
    end

    def last
      @cursor.last
      nil
    end

    # Moves to the first pair at or after (+key+, +value+).
    def jump(key, value = "")
      @cursor.jump(key.to_s, value.to_s)
      nil
    end

    def next
      @cursor.next
      nil
    end

    def previous
      @cursor.previous
      nil
    end

    # [key, value] of the pair at the position, or nil.
    def get
      @cursor.get
    rescue Kuradb::Error
      nil
    end

    def to_s
      pair = get
      "#<Tkrzw::IndexIterator:#{pair ? pair.map(&:inspect).join(':') : '(unlocated)'}>"
    end

    alias inspect to_s
  end
end
