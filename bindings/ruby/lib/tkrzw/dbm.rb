# frozen_string_literal: true

module Tkrzw
  # Polymorphic database manager, as the reference's Tkrzw::DBM, over a
  # Kuradb::DBM. Keys and values may be any objects: they are stored as
  # their to_s, as the reference does.
  class DBM
    include Calls

    # What the reference calls an absent database, raised as it raises it.
    NOT_OPENED = "not opened database"
    private_constant :NOT_OPENED

    # As an expected value of the compare-exchange methods: the record
    # exists, with any value; as a desired value of #compare_exchange and
    # #compare_exchange_and_get: leave the record as it is.
    ANY_DATA = Kuradb::DBM::ANY_DATA

    def initialize
      @db = nil
      @writable = false
      @no_file = false
      @sync_hard = false
    end

    # Closes the database if it is open; the object stays usable for open.
    def destruct
      close if @db
      nil
    end

    # Opens a database file; every parameter of the reference is a keyword.
    # +concurrent: true+ runs the calls that run no Ruby code without the
    # VM lock, as the reference's does (docs/ruby.md). An empty path opens
    # an on-memory database with no file, as the reference's does: of the
    # class +dbm:+ names (TinyDBM by default; a file class answers
    # NOT_FOUND_ERROR), taking writes even if not +writable+; #file_path
    # and #file_size answer nil (#file_path "" for a shard set), #writable?
    # false, #copy_file_data PRECONDITION_ERROR.
    def open(path, writable, params = nil, **keywords)
      # As the reference's: opening an open DBM raises.
      raise "opened database" if @db

      params = TkrzwParams.given(params, keywords).transform_keys(&:to_sym)
      sync_hard = Kuradb::Params.flag(params.delete(:sync_hard))
      @db = Kuradb::DBM.open(path.to_s, writable, **TkrzwParams.open(path, params))
      @no_file = path.to_s.empty?
      @writable = writable && !@no_file ? true : false
      @sync_hard = sync_hard && @writable
      Status.new
    rescue Kuradb::Error, TypeError, ArgumentError => e
      StatusOf.status_of(e)
    end

    # Closes the database; opened with +sync_hard+, it first synchronizes
    # it with the device, as the reference's close does then.
    def close
      db = opened
      outcome = call do
        db.synchronize(true) if @sync_hard
      ensure
        db.close
      end
      @db = nil unless db.open?
      outcome
    end

    # Calls the block with the key and the value (nil if absent) under the
    # record's lock: a String (or any object, as its to_s) it answers is
    # the new value, false removes the record, nil keeps it. The block
    # must not use this database. It runs with the VM lock held, also in
    # the concurrent mode (where the reference refuses it).
    def process(key, writable, &block)
      raise ArgumentError, "process needs a block" unless block

      call { opened.process(str(key), writable ? true : false) { |k, v| fate(block.call(k, v), writable) } }
    end

    # Calls the block with every record, as #process does for one, and
    # once before and once after them with nil and nil, as the reference
    # does.
    def process_each(writable, &block)
      raise ArgumentError, "process_each needs a block" unless block

      call do
        db = opened
        block.call(nil, nil)
        db.process_each(writable ? true : false) { |k, v| fate(block.call(k, v), writable) }
        block.call(nil, nil)
      end
    end

    # Calls the block with each of +keys+ and its value (nil if absent) as
    # #process does, atomically over all of them: every record is locked
    # before the first call.
    def process_multi(keys, writable, &block)
      raise ArgumentError, "process_multi needs a block" unless block

      wanted = Array(keys).flatten.map { |k| str(k) }
      call { opened.process_multi(wanted, writable ? true : false) { |k, v| fate(block.call(k, v), writable) } }
    end

    # Calls the block with the first record's key and value, as #process
    # does; NOT_FOUND_ERROR if the database is empty.
    def process_first(writable, &block)
      raise ArgumentError, "process_first needs a block" unless block

      call do
        found = opened.process_first(writable ? true : false) { |k, v| fate(block.call(k, v), writable) }
        raise Kuradb::NotFoundError, "not found: no record" unless found
      end
    end

    def get(key, status = nil)
      value = opened.get(str(key))
      StatusOf.report(status, value.nil? ? Status.new(Status::NOT_FOUND_ERROR) : Status.new)
      value
    rescue Kuradb::Error => e
      StatusOf.report(status, StatusOf.status_of(e))
      nil
    end

    # The records of the +keys+ that exist, as a Hash.
    def get_multi(*keys)
      opened.get_multi(keys.flatten.map { |k| str(k) })
    rescue Kuradb::Error
      {}
    end

    def set(key, value, overwrite = true)
      call { opened.set(str(key), str(value), overwrite: overwrite ? true : false) }
    end

    # The records as keywords, or as a Hash in place of +overwrite+ (the
    # reference's older form), overwriting then. Without +overwrite+, as the
    # reference, the records that exist stay (DUPLICATION_ERROR) and the
    # others are set.
    def set_multi(overwrite = true, **records)
      overwrite, records = true, overwrite.merge(records) if overwrite.is_a?(Hash)
      unless overwrite
        status = Status.new
        records.each do |k, v|
          status.join(set(k, v, false))
          break unless [Status::SUCCESS, Status::DUPLICATION_ERROR].include?(status.code)
        end
        return status
      end
      pairs = records.to_h { |k, v| [str(k), str(v)] }
      call { opened.set_multi(pairs, overwrite: true) }
    end

    # [Status, the old value or nil].
    def set_and_get(key, value, overwrite = true)
      old = nil
      outcome = call { old = opened.set_and_get(str(key), str(value), overwrite: overwrite ? true : false) }
      outcome = Status.new(Status::DUPLICATION_ERROR, "the record exists") if outcome.ok? && !overwrite && old
      [outcome, old]
    end

    def remove(key)
      call do
        raise Kuradb::NotFoundError, "not found: no record" unless opened.remove(str(key))
      end
    end

    def remove_multi(*keys)
      wanted = keys.flatten.map { |k| str(k) }
      call do
        raise Kuradb::NotFoundError, "not found: some records are missing" if opened.remove_multi(wanted) < wanted.uniq.size
      end
    end

    # [Status, the removed value or nil].
    def remove_and_get(key)
      old = nil
      outcome = call { old = opened.remove_and_get(str(key)) }
      outcome = Status.new(Status::NOT_FOUND_ERROR) if outcome.ok? && old.nil?
      [outcome, old]
    end

    def append(key, value, delim = "")
      call { opened.append(str(key), str(value), str(delim)) }
    end

    # The records as keywords, or as a Hash in place of +delim+, appended
    # then with no delimiter.
    def append_multi(delim = "", **records)
      delim, records = "", delim.merge(records) if delim.is_a?(Hash)
      call { records.each { |k, v| opened.append(str(k), str(v), str(delim)) } }
    end

    def compare_exchange(key, expected, desired)
      call do
        done = opened.compare_exchange(str(key), expected&.then { |e| str(e) }, desired&.then { |d| str(d) })
        raise Kuradb::InfeasibleError, "infeasible: the value does not match" unless done
      end
    end

    # [Status, the value before or nil]; INFEASIBLE_ERROR if the record was
    # not +expected+. Either value may be ANY_DATA.
    def compare_exchange_and_get(key, expected, desired)
      outcome = nil
      status = call do
        outcome = opened.compare_exchange_and_get(str(key), expected&.then { |e| str(e) },
                                                  desired&.then { |d| str(d) })
      end
      return [status, nil] unless status.ok?

      [outcome[0] ? status : Status.new(Status::INFEASIBLE_ERROR, "infeasible: the value does not match"),
       outcome[1]]
    end

    # NOT_FOUND_ERROR without +old_key+; DUPLICATION_ERROR if +new_key+
    # exists and +overwrite+ is false.
    def rekey(old_key, new_key, overwrite = true, copying = false)
      call do
        opened.rekey(str(old_key), str(new_key), overwrite: overwrite ? true : false,
                                                 copying: copying ? true : false)
      end
    end

    # [key, value] of the first record, removed, or nil (NOT_FOUND_ERROR in
    # +status+ if the database is empty).
    def pop_first(status = nil)
      record = opened.pop_first
      StatusOf.report(status, record ? Status.new : Status.new(Status::NOT_FOUND_ERROR))
      record
    rescue Kuradb::Error => e
      StatusOf.report(status, StatusOf.status_of(e))
      nil
    end

    # Stores +value+ under a key made from the time +wtime+ (seconds since
    # the epoch; nil: now), 8 big-endian bytes of 10 ns units.
    def push_last(value, wtime = nil)
      call { opened.push_last(str(value), wtime: wtime&.to_f) }
    end

    # The new number, or nil on failure; +inc+ Utility::INT64MIN only reads.
    # As the reference's: a stored value of any length counts from its first
    # 8 bytes, big-endian; Utility::INT64MIN reads without changing.
    def increment(key, inc = 1, init = 0, status = nil)
      value = opened._increment_as_reference(str(key), inc, init)
      StatusOf.report(status, Status.new)
      value
    rescue Kuradb::Error => e
      StatusOf.report(status, StatusOf.status_of(e))
      nil
    end

    def compare_exchange_multi(expected, desired)
      conv = ->(pairs) { pairs.map { |k, v| [str(k), v&.then { |x| str(x) }] } }
      call do
        raise Kuradb::InfeasibleError, "infeasible: the values do not match" unless
          opened.compare_exchange_multi(conv.call(expected), conv.call(desired))
      end
    end

    def count
      opened.count
    rescue Kuradb::Error
      nil
    end

    def file_size
      db = opened
      @no_file ? nil : db.file_size
    rescue Kuradb::Error
      nil
    end

    def file_path
      opened.path
    rescue Kuradb::Error
      nil
    end

    # The last modification time of the database's file in seconds (a
    # Float), as the operating system keeps it (kuradb's files hold no
    # time of their own): the newest of the shard files of a sharded
    # database; nil for a database in memory or on failure.
    def timestamp
      path = opened.path
      return nil if path.nil? || path.empty?

      files = ::File.exist?(path) ? [path] : Dir.glob("#{path.gsub(/[*?\[\]{}\\]/) { |c| "\\#{c}" }}-*-of-*")
      files.map { |f| ::File.mtime(f).to_f }.max
    rescue Kuradb::Error, SystemCallError
      nil
    end

    def clear
      call { opened.clear }
    end

    # +params+ as a Hash or as keywords, as #open takes them.
    def rebuild(params = nil, **keywords)
      call { opened.rebuild(**TkrzwParams.rebuild(TkrzwParams.given(params, keywords))) }
    end

    def should_be_rebuilt?
      opened.should_be_rebuilt?
    end

    # Only a skip database uses +params+, as the reference documents:
    # +merge+ (paths separated by colons) and +reducer+.
    def synchronize(hard, params = nil, **keywords)
      call { opened.synchronize(hard, **TkrzwParams.given(params, keywords).transform_keys(&:to_sym)) }
    end

    def copy_file_data(dest_path, sync_hard = false)
      opened
      return Status.new(Status::PRECONDITION_ERROR, "the database has no file: it was opened with an empty path") if @no_file

      call { opened.copy_file_data(dest_path.to_s, hard: sync_hard ? true : false) }
    end

    def export(dest_dbm)
      call { opened.export(dest_dbm.send(:opened)) }
    end

    # Writes every record to +dest_file+ (a Tkrzw::File open for writing,
    # or a path), replacing what it held, in the reference's flat record
    # format.
    def export_to_flat_records(dest_file)
      call { opened.export_to_flat_records(File.target(dest_file)) }
    end

    # Sets every record of the flat record file +src_file+ (a Tkrzw::File
    # or a path).
    def import_from_flat_records(src_file)
      call { opened.import_from_flat_records(File.target(src_file)) }
    end

    # Writes every key, each followed by a line feed, to +dest_file+ (a
    # Tkrzw::File open for writing, or a path), replacing what it held.
    def export_keys_as_lines(dest_file)
      call { opened.export_keys_as_lines(File.target(dest_file)) }
    end

    # A Hash of the database's figures; "class" is the reference's name.
    def inspect_details
      details = opened.inspect_details
      details["class"] = opened._dbm_class[1]
      details
    end

    def open?
      !@db.nil?
    end

    def writable?
      open? && @writable
    end

    def healthy?
      opened.healthy?
    end

    def ordered?
      opened.ordered?
    end

    # The keys matching +pattern+ by +mode+ ("contain", "begin", "end",
    # "regex", "edit", "editbin", ...); an unknown mode raises.
    def search(mode, pattern, capacity = 0)
      opened.search(mode.to_s, str(pattern), capacity)
    rescue Kuradb::Error => e
      raise StatusException, StatusOf.status_of(e)
    end

    def make_iterator
      Iterator.new(self)
    end

    # Restores a broken database as a new one; the class is guessed from
    # the extension unless +class_name+ gives it. A positive +end_offset+
    # restores a hash database in appending mode as it was when the file
    # ended there; 0 or negative restores every record it can read. A
    # non-empty file at +new_file_path+ answers PRECONDITION_ERROR, as the
    # reference answers, rather than being written over.
    def self.restore_database(old_file_path, new_file_path, class_name = "", end_offset = -1, cipher_key = nil)
      params = class_name.to_s.empty? ? {} : { dbm: class_name.to_s }
      params[:end_offset] = end_offset.to_i if end_offset.to_i.positive?
      # The key of an encrypted source, which the restored copy keeps.
      params[:cipher_key] = cipher_key.to_s unless cipher_key.nil? || cipher_key.to_s.empty?
      if ::File.size?(new_file_path.to_s)
        return Status.new(Status::PRECONDITION_ERROR, "the new database is not empty")
      end

      Kuradb::DBM.restore(old_file_path.to_s, new_file_path.to_s, **params)
      Status.new
    rescue Kuradb::Error, TypeError, ArgumentError => e
      StatusOf.status_of(e)
    end

    # The class, the quoted path and the number of records, as the
    # reference's: +HashDBM:"casket.tkh":3+. A database that is not open
    # answers "(unopened)" instead of raising, so that printing it is safe.
    def to_s
      return "(unopened)" unless @db

      "#{@db._dbm_class[1]}:#{file_path.to_s.inspect}:#{count}"
    end

    # #to_s within +#<Tkrzw::DBM:...>+, as the reference's.
    def inspect
      "#<Tkrzw::DBM:#{self}>"
    end

    # The number of records, or -1 on failure.
    def to_i
      opened.count
    rescue Kuradb::Error
      -1
    end

    def [](key)
      get(key)
    end

    def []=(key, value)
      opened[str(key)] = str(value)
    end

    # Removes the record and answers its value, or nil.
    def delete(key)
      opened.delete(str(key))
    end

    def include?(key)
      opened.key?(str(key))
    end

    # Yields every record as (key, value).
    def each(&block)
      db = opened
      raise ArgumentError, "block is not given" unless block

      db.each(&block)
      nil
    end

    private

    def opened
      @db or raise NOT_OPENED
    end

    # What a block's answer means to Kuradb::DBM#process.
    # As the reference, a read-only call leaves the record whatever the
    # block answers.
    def fate(answer, writable)
      return nil unless writable

      answer.nil? || answer == false ? answer : str(answer)
    end
  end
end
