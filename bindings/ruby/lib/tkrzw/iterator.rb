# frozen_string_literal: true

module Tkrzw
  # Iterator for each record, as the reference's (DBM#make_iterator).
  class Iterator
    include Calls

    def initialize(dbm)
      raise ArgumentError, "#<Tkrzw::StatusException>" unless dbm.is_a?(DBM)

      @cursor = dbm.send(:opened).cursor
    end

    # Releases the cursor.
    def destruct
      @cursor = nil
    end

    def first
      call { cursor.first }
    end

    def last
      call { cursor.last }
    end

    def jump(key)
      call { cursor.jump(str(key)) }
    end

    def jump_lower(key, inclusive = false)
      call { cursor.jump_lower(str(key), inclusive ? true : false) }
    end

    def jump_upper(key, inclusive = false)
      call { cursor.jump_upper(str(key), inclusive ? true : false) }
    end

    def next
      call { cursor.next }
    end

    def previous
      call { cursor.previous }
    end

    # [key, value] of the current record, or nil (status NOT_FOUND_ERROR).
    def get(status = nil)
      record = nil
      outcome = call { record = cursor.get }
      outcome = Status.new(Status::NOT_FOUND_ERROR) if outcome.ok? && record.nil?
      StatusOf.report(status, outcome)
      record
    end

    # [key, value] of the current record, moving past it; nil (status
    # NOT_FOUND_ERROR) at the end.
    def step(status = nil)
      record = nil
      outcome = call { record = cursor.step }
      outcome = Status.new(Status::NOT_FOUND_ERROR) if outcome.ok? && record.nil?
      StatusOf.report(status, outcome)
      record
    end

    def get_key(status = nil)
      get(status)&.first
    end

    def get_value(status = nil)
      get(status)&.last
    end

    def set(value)
      call { cursor.set(str(value)) }
    end

    def remove
      call { cursor.remove }
    end

    def to_s
      key = @cursor && get_key
      "#<Tkrzw::Iterator:#{key.nil? ? '(unlocated)' : key.inspect}>"
    end

    alias inspect to_s

    private

    def cursor
      @cursor or raise Kuradb::InfeasibleError, "infeasible: the iterator was destructed"
    end
  end
end
