# frozen_string_literal: true

module Tkrzw
  # The result of an AsyncDBM operation, as the reference's Tkrzw::Future:
  # #get answers a Status, or [Status, value] for the operations that
  # answer a value; #wait(timeout = -1) answers whether it is done.
  class Future
    # +future+ is a Kuradb::Future, or nil for an operation that failed
    # before it was queued, with its Status +failure+.
    def initialize(future, failure = nil, &convert)
      @future = future
      @failure = failure
      @convert = convert
    end

    # Waits up to +timeout+ seconds (negative: no limit).
    def wait(timeout = -1)
      return true if @future.nil?

      @future.wait(timeout.negative? ? nil : timeout)
    end

    def get
      return @convert.call(@failure, nil) if @future.nil?

      outcome = begin
        [Status.new, @future.get]
      rescue Kuradb::Error => e
        [StatusOf.status_of(e), nil]
      end
      @convert.call(*outcome)
    end

    def destruct
      nil
    end

    def to_s
      "#<Tkrzw::Future>"
    end

    alias inspect to_s
  end

  # A DBM's operations on worker threads, as the reference's Tkrzw::AsyncDBM.
  class AsyncDBM
    include Calls

    def initialize(dbm, num_worker_threads)
      @adb = Kuradb::AsyncDBM.new(dbm.send(:opened), num_worker_threads)
    end

    # Waits for the queued operations and stops the workers.
    def destruct
      @adb.close
      nil
    end

    def get(key)
      future(@adb.get(str(key))) do |st, value|
        st = Status.new(Status::NOT_FOUND_ERROR) if st.ok? && value.nil?
        [st, value]
      end
    end

    def get_multi(*keys)
      wanted = keys.flatten.map { |k| str(k) }
      future(@adb.get_multi(*wanted)) do |st, found|
        found ||= {}
        st = Status.new(Status::NOT_FOUND_ERROR) if st.ok? && found.size < wanted.uniq.size
        [st, found]
      end
    end

    def set(key, value, overwrite = true)
      status_future(@adb.set(str(key), str(value), overwrite: overwrite ? true : false))
    end

    # Without +overwrite+, as the reference, the records that exist stay
    # (DUPLICATION_ERROR) and the others are set, in one task.
    def set_multi(overwrite = true, **records)
      pairs = records.to_h { |k, v| [str(k), str(v)] }
      return status_future(@adb.set_multi(pairs, overwrite: true)) if overwrite

      future(@adb._set_absent_multi(pairs.to_a)) do |st, kept|
        st.ok? && !kept.empty? ? Status.new(Status::DUPLICATION_ERROR) : st
      end
    end

    def append(key, value, delim = "")
      status_future(@adb.append(str(key), str(value), str(delim)))
    end

    # Appends each record in turn (not atomically together).
    def append_multi(delim = "", **records)
      futures = records.map { |k, v| @adb.append(str(k), str(v), str(delim)) }
      last = futures.pop || @adb.count
      future(last) do |st, _|
        futures.each { |f| f.get } if st.ok?
        st
      rescue Kuradb::Error => e
        StatusOf.status_of(e)
      end
    end

    def remove(key)
      future(@adb.remove(str(key))) do |st, existed|
        st.ok? && !existed ? Status.new(Status::NOT_FOUND_ERROR) : st
      end
    end

    def remove_multi(*keys)
      wanted = keys.flatten.map { |k| str(k) }
      future(@adb.remove_multi(*wanted)) do |st, removed|
        st.ok? && removed < wanted.uniq.size ? Status.new(Status::NOT_FOUND_ERROR) : st
      end
    end

    def compare_exchange(key, expected, desired)
      f = @adb.compare_exchange(str(key), expected&.then { |e| str(e) }, desired&.then { |d| str(d) })
      future(f) { |st, done| st.ok? && !done ? Status.new(Status::INFEASIBLE_ERROR) : st }
    end

    # INFEASIBLE_ERROR if an expectation does not hold; an expected value
    # may be DBM::ANY_DATA.
    def compare_exchange_multi(expected, desired)
      conv = ->(pairs) { pairs.map { |k, v| [str(k), v&.then { |x| str(x) }] } }
      native = begin
        @adb.compare_exchange_multi(conv.call(expected), conv.call(desired))
      rescue TypeError, ArgumentError => e
        return failed(e)
      end
      future(native) { |st, done| st.ok? && !done ? Status.new(Status::INFEASIBLE_ERROR) : st }
    end

    # NOT_FOUND_ERROR without +old_key+; DUPLICATION_ERROR if +new_key+
    # exists and +overwrite+ is false.
    def rekey(old_key, new_key, overwrite = true, copying = false)
      status_future(@adb.rekey(str(old_key), str(new_key), overwrite: overwrite ? true : false,
                                                           copying: copying ? true : false))
    end

    # The future's get answers [Status, key, value] of the first record,
    # removed; NOT_FOUND_ERROR and nils if the database is empty.
    def pop_first
      future(@adb.pop_first) do |st, record|
        st = Status.new(Status::NOT_FOUND_ERROR) if st.ok? && record.nil?
        [st, *(record || [nil, nil])]
      end
    end

    def push_last(value, wtime = nil)
      status_future(@adb.push_last(str(value), wtime: wtime&.to_f))
    end

    def increment(key, inc = 1, init = 0)
      future(@adb._increment_as_reference(str(key), inc, init)) { |st, n| [st, n] }
    end

    def clear
      status_future(@adb.clear)
    end

    # +params+ as a Hash or as keywords, as DBM#rebuild takes them.
    def rebuild(params = nil, **keywords)
      status_future(@adb.rebuild(**TkrzwParams.rebuild(TkrzwParams.given(params, keywords))))
    end

    def synchronize(hard, params = nil, **keywords)
      status_future(@adb.synchronize(hard, **TkrzwParams.given(params, keywords).transform_keys(&:to_sym)))
    end

    def search(mode, pattern, capacity = 0)
      future(@adb.search(mode.to_s, str(pattern), capacity)) { |st, keys| [st, keys || []] }
    end

    def copy_file_data(dest_path, sync_hard = false)
      status_future(@adb.copy_file_data(dest_path.to_s, hard: sync_hard ? true : false))
    end

    # The task holds +dest_dbm+ open: it refuses to close until the task
    # is done.
    def export(dest_dbm)
      native = begin
        @adb.export(dest_dbm.send(:opened))
      rescue Kuradb::Error, RuntimeError => e
        return failed(e)
      end
      status_future(native)
    end

    # Writes every record to +dest_file+ (a Tkrzw::File open for writing,
    # or a path), replacing what it held.
    def export_to_flat_records(dest_file)
      path = begin
        File.target(dest_file)
      rescue Kuradb::Error, TypeError => e
        return failed(e)
      end
      status_future(@adb.export_to_flat_records(path))
    end

    # Sets every record of the flat record file +src_file+ (a Tkrzw::File
    # or a path).
    def import_from_flat_records(src_file)
      path = begin
        File.target(src_file)
      rescue Kuradb::Error, TypeError => e
        return failed(e)
      end
      status_future(@adb.import_from_flat_records(path))
    end

    def to_s
      "#<Tkrzw::AsyncDBM>"
    end

    alias inspect to_s

    private

    def future(native, &convert)
      Future.new(native, &convert)
    end

    def status_future(native)
      Future.new(native) { |st, _| st }
    end

    # A future already done, with the Status of +error+.
    def failed(error)
      Future.new(nil, StatusOf.status_of(error)) { |st, _| st }
    end
  end
end
