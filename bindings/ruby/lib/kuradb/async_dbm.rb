# frozen_string_literal: true

module Kuradb
  # A DBM's operations run by worker threads, each answering a Future:
  #
  #   adb = Kuradb::AsyncDBM.new(db, 4)
  #   futures = keys.map { |k| adb.set(k, "v") }
  #   futures.each(&:get)          # raises the operation's error, if any
  #   adb.get("k").get             # => "v"
  #   adb.close                    # waits for what is queued
  #
  # The DBM cannot close while an AsyncDBM on it is open. Operations after
  # close answer futures that raise InfeasibleError.
  class AsyncDBM
    # Puts the open +dbm+ behind +num_workers+ threads; with a block, yields
    # the AsyncDBM and closes it when the block ends.
    def self.new(dbm, num_workers = 1)
      raise TypeError, "an AsyncDBM needs a Kuradb::DBM, not #{dbm.class}" unless dbm.is_a?(DBM)

      adb = _new(dbm, Integer(num_workers))
      return adb unless block_given?

      begin
        yield adb
      ensure
        adb.close
      end
    end

    def set(key, value, overwrite: true)
      _set(key, value, overwrite)
    end

    def append(key, value, delimiter = "")
      _append(key, value, delimiter)
    end

    def increment(key, delta = 1, initial = 0)
      _increment(key, delta, initial)
    end

    def get_multi(*keys)
      _get_multi(keys.flatten)
    end

    def set_multi(records, overwrite: true)
      _set_multi(records.to_a, overwrite)
    end

    def remove_multi(*keys)
      _remove_multi(keys.flatten)
    end

    # The future answers whether it exchanged; +expected+ and +desired+ may
    # be DBM::ANY_DATA, as in DBM#compare_exchange.
    def compare_exchange(key, expected, desired)
      _compare_exchange(key, expected, DBM::ANY_DATA == expected, desired, DBM::ANY_DATA == desired)
    end

    # The future answers whether it exchanged (see DBM#compare_exchange_multi).
    def compare_exchange_multi(expected, desired)
      expected = expected.to_a
      _compare_exchange_multi(expected, expected.map { |pair| DBM::ANY_DATA == pair[1] }, desired.to_a)
    end

    # Moves the record of +old_key+ to +new_key+, as DBM#rekey.
    def rekey(old_key, new_key, overwrite: true, copying: false)
      _rekey(old_key, new_key, overwrite ? true : false, copying ? true : false)
    end

    # The future answers [key, value] of the first record, removed, or nil;
    # a +retry_wait+ holds one worker for up to that many seconds.
    def pop_first(retry_wait: nil)
      _pop_first(retry_wait&.to_f)
    end

    # The future answers the new record's key (see DBM#push_last).
    def push_last(value, wtime: nil)
      _push_last(value, wtime&.to_f)
    end

    # Synchronizes; parameters (a skip database's +merge+ and +reducer+)
    # work as with DBM#synchronize.
    def synchronize(hard = false, **params)
      if params.empty?
        _synchronize(hard ? true : false)
      else
        _synchronize_with(hard ? true : false, Params.pairs(params))
      end
    end

    def rebuild(**params)
      _rebuild(Params.pairs(params))
    end

    def search(mode, pattern, capacity = 0)
      _search(mode.to_s, pattern, capacity)
    end

    # Writes a consistent copy of the database's file to +dest+.
    def copy_file_data(dest, hard: false)
      _copy_file_data(dest.to_s, hard ? true : false)
    end

    # Writes every record to a new flat record file at +path+.
    def export_to_flat_records(path)
      _export_to_flat_records(path.is_a?(File) ? path : path.to_s)
    end

    # Sets every record of the flat record file at +path+; the future
    # answers how many.
    def import_from_flat_records(path)
      _import_from_flat_records(path.is_a?(File) ? path : path.to_s)
    end
  end

  # The pending result of an AsyncDBM operation: #get waits for it and
  # answers it (or raises its error); #wait(timeout) answers whether it is
  # done within +timeout+ seconds (nil: no limit). Waiting lets other Ruby
  # threads run.
  class Future
    def wait(timeout = nil)
      _wait(timeout&.to_f)
    end
  end
end
