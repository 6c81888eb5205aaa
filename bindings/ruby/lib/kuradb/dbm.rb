# frozen_string_literal: true

require "kuradb/params"

module Kuradb
  # A database of any class (hash, tree, skip, tiny, baby, cache, ...),
  # chosen by the path's extension or the +dbm:+ parameter. One object may
  # be used by several Ruby threads; see docs/ruby.md for how they share it.
  #
  # The native methods (get, [], []=, key?, remove, delete, count, ...) are
  # defined by the extension; this file adds the ones with optional
  # arguments or blocks, and Enumerable over (key, value) pairs.
  class DBM
    include Enumerable

    # The reference's ANY_DATA (any String equal to it counts): as an
    # expected value of #compare_exchange, #compare_exchange_and_get or
    # #compare_exchange_multi, "the record exists, with any value"; as the
    # desired value of the first two, "leave the record as it is" (in
    # #compare_exchange_multi's desired pairs it is an ordinary value).
    ANY_DATA = "\0[ANY]\0".b.freeze

    # DBM.open(path, writable = false, **params) opens the database at
    # +path+ (read-only unless +writable+); +params+ are the core's open
    # parameters (dbm:, num_buckets:, truncate:, ...) plus +encoding:+, the
    # encoding returned Strings are tagged with, and +concurrent:+, true to
    # run calls that run no Ruby code without Ruby's VM lock, so that other
    # threads run meanwhile (docs/ruby.md). An empty or nil +path+ opens an
    # on-memory database of the class +dbm:+ names (tiny without it),
    # without a file; with +num_shards:+, a set of them. With a block,
    # yields the database and closes it when the block ends (however it
    # ends), answering the block's value; without, answers the open
    # database.
    extend Opening

    # Restores the damaged database at +src+ into a new one at +dest+;
    # answers the number of records kept.
    def self.restore(src, dest, **params)
      _restore(src.to_s, dest.to_s, Params.pairs(params))
    end

    # Opens this (closed) database object; see DBM.open. An empty or nil
    # +path+ opens an on-memory database of the class +dbm:+ names (tiny
    # without it).
    def open(path, writable = false, **params)
      encoding = params.delete(:encoding) || params.delete("encoding")
      # Encoding.find raises ArgumentError naming an unknown encoding.
      encoding &&= Encoding.find(encoding.to_s).name
      concurrent = params.key?(:concurrent) ? params.delete(:concurrent) : params.delete("concurrent")
      _open(path.to_s, writable ? true : false, Params.pairs(params), encoding, Params.flag(concurrent))
      self
    end

    # Stores +value+ under +key+. With +overwrite: false+ an existing
    # record stays and DuplicationError is raised. +ttl:+ (seconds, a
    # database opened with +expiry: true+) makes the record expire that
    # long from now; without it the record never expires.
    def set(key, value, overwrite: true, ttl: nil)
      if ttl.nil?
        _set(key, value, overwrite)
      else
        _set_with_ttl(key, value, overwrite, Float(ttl))
      end
      self
    end

    # Makes +key+ expire +seconds+ from now (0: at once); answers whether
    # it had a record.
    def expire(key, seconds)
      _expire(key, Float(seconds))
    end

    # Makes +key+ expire at +time+ (a Time, or seconds since the Unix
    # epoch); answers whether it had a record.
    def expire_at(key, time)
      _expire_at(key, time.is_a?(Time) ? time.to_f : Float(time))
    end

    # The seconds +key+ has left (a Float), or nil if it never expires;
    # KeyError if there is no record (or it has expired), as +fetch+ raises.
    def ttl(key)
      at, now = _expiry_ms(key)
      raise KeyError.new("key not found: #{key.inspect}", receiver: self, key: key) if at.nil?
      return nil if at == -1

      [at - now, 0].max / 1000.0
    end

    # The Time +key+ expires, or nil if it never expires; KeyError if there
    # is no record.
    def expiry(key)
      at, = _expiry_ms(key)
      raise KeyError.new("key not found: #{key.inspect}", receiver: self, key: key) if at.nil?
      return nil if at == -1

      Time.at(at / 1000, at % 1000, :millisecond)
    end

    # Removes expired records, looking at +max_records+ records at most from
    # where the last sweep stopped; answers { visited:, removed:,
    # finished_pass: }.
    def sweep(max_records)
      visited, removed, finished = _sweep(Integer(max_records))
      { visited: visited, removed: removed, finished_pass: finished }
    end

    # Starts a background thread removing expired records, looking at
    # +records_per_second+ records a second at most; +stop_sweeper+ (which
    # answers how many it removed, nil if none ran) or +close+ stops it.
    def start_sweeper(records_per_second)
      _start_sweeper(Integer(records_per_second))
      self
    end

    # Stores +value+ under +key+ and answers the value it replaced (nil: none).
    def set_and_get(key, value, overwrite: true)
      _set_and_get(key, value, overwrite)
    end

    # The value of +key+; without a record, the +default+ or the block's
    # value, or KeyError if neither is given (like Hash#fetch).
    def fetch(key, *default)
      value = get(key)
      return value unless value.nil?
      return yield(key) if block_given?
      return default.first unless default.empty?

      raise KeyError.new("key not found: #{key.inspect}", receiver: self, key: key)
    end

    # Appends +value+ to the value of +key+ with +delimiter+ between them,
    # or sets it if there is no record.
    def append(key, value, delimiter = "")
      _append(key, value, delimiter)
      self
    end

    # Adds +delta+ to the 8-byte big-endian number under +key+ (starting
    # from +initial+ if absent) and answers the sum; +delta+ nil only reads.
    def increment(key, delta = 1, initial = 0)
      _increment(key, delta, initial)
    end

    # The values of the +keys+ that have records, as a Hash.
    def get_multi(*keys)
      _get_multi(keys.flatten)
    end

    # Stores every pair of +records+ (a Hash) atomically; with
    # +overwrite: false+ nothing is stored if any key exists.
    def set_multi(records, overwrite: true)
      _set_multi(records.to_a, overwrite)
      self
    end

    # Removes the records of +keys+ atomically; answers how many existed.
    def remove_multi(*keys)
      _remove_multi(keys.flatten)
    end

    # Calls the block with the key and its value (nil if absent) under the
    # record's lock, and does what it returns: a String is the new value,
    # false removes the record, nil or true keeps it. An exception from
    # the block leaves the record and is raised here. The block must not
    # use this database (that raises InfeasibleError).
    def process(key, writable = true, &block)
      raise ArgumentError, "process needs a block" unless block

      _process(key, writable, block)
    end

    # Calls the block with each of +keys+ and its value (nil if absent), as
    # #process does for one, atomically: every record is locked before the
    # first call, and no other thread sees a state between two calls. A key
    # given twice is shown the value the first call left.
    def process_multi(keys, writable = true, &block)
      raise ArgumentError, "process_multi needs a block" unless block

      _process_multi(Array(keys), writable ? true : false, block)
    end

    # Calls the block with the first record's key and value (in the order of
    # a cursor), as #process does; answers false, without calling it, if
    # the database is empty.
    def process_first(writable = true, &block)
      raise ArgumentError, "process_first needs a block" unless block

      _process_first(writable ? true : false, block)
    end

    # If the record of +key+ is +expected+ (nil: absent; ANY_DATA: any
    # value), makes it +desired+ (nil: removed; ANY_DATA: left as it is),
    # atomically; answers whether it did.
    def compare_exchange(key, expected, desired)
      return compare_exchange_and_get(key, expected, desired).first if ANY_DATA == expected || ANY_DATA == desired

      _compare_exchange(key, expected, desired)
    end

    # If every pair of +expected+ ([key, value] Arrays; nil: absent,
    # ANY_DATA: any value) holds, applies every pair of +desired+ (nil:
    # remove), atomically; answers whether it did.
    def compare_exchange_multi(expected, desired)
      expected = expected.to_a
      _compare_exchange_multi(expected, expected.map { |pair| ANY_DATA == pair[1] }, desired.to_a)
    end

    # Like #compare_exchange, answering [done, the value before (nil:
    # absent)]; +expected+ and +desired+ may be ANY_DATA.
    def compare_exchange_and_get(key, expected, desired)
      _compare_exchange_and_get(key, expected, ANY_DATA == expected, desired, ANY_DATA == desired)
    end

    # Moves the record of +old_key+ to +new_key+ atomically (keeping the old
    # one with +copying: true+). NotFoundError if +old_key+ is absent,
    # DuplicationError if +new_key+ exists and +overwrite+ is false.
    def rekey(old_key, new_key, overwrite: true, copying: false)
      _rekey(old_key, new_key, overwrite ? true : false, copying ? true : false)
      self
    end

    # Removes the first record and answers it as [key, value], or nil if
    # there is none; with +retry_wait+ seconds, an empty database is waited
    # on that long for a #push_last (the VM lock is released meanwhile).
    def pop_first(retry_wait: nil)
      _pop_first(retry_wait&.to_f)
    end

    # Stores +value+ under a new key made from the time +wtime+ (seconds
    # since the epoch; nil: now): 8 big-endian bytes counting 10 ns units,
    # the next free one if taken, so records queue in push order. Answers
    # the key.
    def push_last(value, wtime: nil)
      _push_last(value, wtime&.to_f)
    end

    # Calls the block with every record under the database's lock, with the
    # same return convention as #process.
    def process_each(writable = true, &block)
      raise ArgumentError, "process_each needs a block" unless block

      _process_each(writable, block)
    end

    # Yields every record as (key, value), in the database's order. The
    # records are read one at a time through a cursor, so the block may
    # use the database (records it adds may or may not be visited).
    def each
      return enum_for(:each) { count } unless block_given?

      cur = cursor
      cur.first
      while (record = cur.step)
        yield record
      end
      self
    end
    alias each_pair each

    # Yields every key.
    def each_key
      return enum_for(:each_key) { count } unless block_given?

      each { |key, _| yield key }
    end

    # Yields every value.
    def each_value
      return enum_for(:each_value) { count } unless block_given?

      each { |_, value| yield value }
    end

    # Every key, in the database's order.
    def keys
      each_key.to_a
    end

    # Every value, in the database's order.
    def values
      each_value.to_a
    end

    # A new cursor, not yet positioned (call first, last or a jump).
    def cursor
      _cursor
    end

    # Whether there are no records.
    def empty?
      count.zero?
    end

    # Rewrites the database compactly, with what +params+ change of its
    # tuning (num_buckets:, align_pow:, ... of a hash database).
    def rebuild(**params)
      _rebuild(Params.pairs(params))
      self
    end

    # Makes every change reach the OS, or the device with +hard+. A skip
    # database takes the reference's +merge:+ (paths of databases whose
    # records it adds, separated by colons) and +reducer:+ (applied to the
    # records of one key) first; other classes ignore them.
    def synchronize(hard = false, **params)
      if params.empty?
        _synchronize(hard ? true : false)
      else
        _synchronize_with(hard ? true : false, Params.pairs(params))
      end
      self
    end

    # Writes every record to a new flat record file at +path+ (the
    # reference's format for moving records between databases); +path+ may
    # also be an open Kuradb::File, written at its end.
    def export_to_flat_records(path)
      _export_to_flat_records(path.is_a?(File) ? path : path.to_s)
      self
    end

    # Sets every record of the flat record file at +path+ (or of a
    # Kuradb::File, read from its start); answers how many.
    def import_from_flat_records(path)
      _import_from_flat_records(path.is_a?(File) ? path : path.to_s)
    end

    # Writes every key, each followed by a line feed, to a new file at +path+.
    def export_keys_as_lines(path)
      _export_keys_as_lines(path.is_a?(File) ? path : path.to_s)
      self
    end

    # Writes a consistent copy of the database's file to +dest+.
    def copy_file_data(dest, hard: false)
      _copy_file_data(dest.to_s, hard)
      self
    end

    # The keys that +mode+ ("contain", "begin", "end", "regex", "edit",
    # "upper", ...) matches with +pattern+, at most +capacity+ (0: all).
    def search(mode, pattern, capacity = 0)
      _search(mode.to_s, pattern, capacity)
    end

    # The class of the open database: "hash", "tree", "skip", ...
    def dbm_class
      _dbm_class[0]
    end

    alias size count
    alias length count
    alias include? key?
    alias has_key? key?
    alias member? key?

    # A short description (class, path, records) for p and irb; the
    # database's own figures are #inspect_details.
    def inspect
      return "#<#{self.class.name} (closed)>" unless open?

      "#<#{self.class.name} #{dbm_class} path=#{path.inspect} count=#{count}>"
    end
  end

  # A cursor of a DBM (DBM#cursor); its records as (key, value) pairs by
  # #each, from the current position on.
  class Cursor
    include Enumerable

    # Moves to the last record whose key is below +key+ (or equal, with
    # +inclusive+); ordered databases only.
    def jump_lower(key, inclusive = false)
      _jump_lower(key, inclusive)
    end

    # Moves to the first record whose key is above +key+ (or equal, with
    # +inclusive+); ordered databases only.
    def jump_upper(key, inclusive = false)
      _jump_upper(key, inclusive)
    end

    # Yields (key, value) from the current position to the end.
    def each
      return enum_for(:each) unless block_given?

      while (record = step)
        yield record
      end
      self
    end
  end
end
