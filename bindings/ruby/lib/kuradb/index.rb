# frozen_string_literal: true

module Kuradb
  # A secondary index: (key, value) pairs in which a key may have many
  # values, kept in order, so every value of a key is found at once. It maps
  # what a program searches by (a city, a tag) to keys of its main database:
  #
  #   Kuradb::Index.open("city.kti", true) do |index|
  #     index.add("tokyo", "user:17")
  #     index.add("tokyo", "user:3")
  #     index.get_values("tokyo")        # => ["user:17", "user:3"]
  #     index.include?("tokyo", "user:3") # => true
  #   end
  #
  # A path makes a file index (a tree file of pairs, kuradb::index's
  # FileIndex); nil or "" an index in memory (MemIndex). Parameters are a
  # tree's, with +key_comparator:+ a pair comparator
  # ("PairLexicalKeyComparator" by default, "PairDecimalKeyComparator", ...),
  # plus +encoding:+ and +concurrent:+ as for DBM.open.
  class Index
    include Enumerable

    # Index.open(path = nil, writable = true, **params) opens (or creates)
    # the index; with a block, yields it and closes it when the block ends,
    # answering the block's value.
    extend Opening

    # Opens this (closed) index object; see Index.open.
    def open(path = nil, writable = true, **params)
      encoding = params.delete(:encoding) || params.delete("encoding")
      encoding &&= Encoding.find(encoding.to_s).name
      concurrent = params.key?(:concurrent) ? params.delete(:concurrent) : params.delete("concurrent")
      _open(path.to_s, writable ? true : false, Params.pairs(params), encoding, Params.flag(concurrent))
      self
    end

    # The values of +key+ in order, at most +max+ of them (0: all).
    def get_values(key, max = 0)
      _get_values(key, Integer(max))
    end

    # Makes every change reach the OS, or the device with +hard+.
    def synchronize(hard = false)
      _synchronize(hard ? true : false)
      self
    end

    # Yields every pair as (key, value), in order.
    def each
      return enum_for(:each) { count } unless block_given?

      cur = cursor
      cur.first
      while (pair = cur.get)
        yield pair
        cur.next
      end
      self
    end

    alias include? check
    alias size count
    alias length count

    def inspect
      return "#<#{self.class.name} (closed)>" unless open?

      "#<#{self.class.name} path=#{path.inspect} count=#{count}>"
    end
  end

  # A position among an Index's pairs (Index#cursor). Pairs added or
  # removed meanwhile never invalidate it; closing the index does.
  class IndexCursor
    # Moves to the first pair at or after (+key+, +value+); with +value+
    # nil, to the first pair of +key+ (or after it, if it has none).
    def jump(key, value = nil)
      _jump(key, value)
    end
  end
end
