# frozen_string_literal: true

module Kuradb
  # The commit durability a Symbol or String names, as the extension takes it.
  def self.durability_name(durability)
    name = durability.to_s
    return name if %w[none os sync].include?(name)

    raise ArgumentError, "durability must be :none, :os or :sync, not #{durability.inspect}"
  end

  # Runs +object+'s block: +finish+ on a normal end, +cancel+ on any other
  # (an exception, which goes on, or a break or throw); answers the block's value.
  def self.finishing(object, finish, cancel)
    done = false
    begin
      result = yield object
      done = true
    ensure
      object.public_send(done ? finish : cancel) unless done && !object.active?
    end
    result
  end
  private_class_method :finishing

  class DBM
    # Starts a serializable transaction whose commit has +durability+
    # (:none, :os or :sync; docs/transactions.md). With a block, yields it,
    # commits it when the block ends normally (unless the block finished
    # it) and answers the block's value; an exception (or a break or throw)
    # aborts it and goes on. A commit that finds that another commit changed
    # what the transaction read raises Kuradb::ConflictError and applies
    # nothing. Without a block, answers the transaction, to #commit or #abort.
    def transaction(durability: :os, &block)
      tx = _begin(Kuradb.durability_name(durability))
      tx.instance_variable_set(:@db, self)
      return tx unless block

      Kuradb.send(:finishing, tx, :commit, :abort, &block)
    end

    # Runs the block in a new transaction (see #transaction) and commits
    # it, answering the block's value. When the commit (or a read) raises
    # Kuradb::ConflictError, waits a short random time and runs the block
    # again in a new transaction, at most +retries+ more times; then the
    # ConflictError goes on. Any other exception aborts the transaction and
    # goes on at once.
    def run_transaction(retries: 10, durability: :os)
      raise ArgumentError, "run_transaction needs a block" unless block_given?
      raise ArgumentError, "retries must be 0 or more, not #{retries}" if retries.negative?

      attempt = 0
      begin
        transaction(durability: durability) { |tx| yield tx }
      rescue ConflictError
        raise if attempt >= retries

        attempt += 1
        # Back off a little, more after each conflict, so that contenders
        # spread out instead of meeting again.
        sleep(rand * 0.0005 * (1 << [attempt, 8].min))
        retry
      end
    end

    # Starts a batch of blind writes (set, remove, append, increment)
    # applied as one unit by its commit, with +durability+. With a block,
    # yields it, commits it when the block ends normally and answers the
    # block's value; an exception (or a break or throw) discards the writes
    # and goes on. Without a block, answers the batch, to #commit or #discard.
    def batch(durability: :os, &block)
      b = _batch(Kuradb.durability_name(durability))
      b.instance_variable_set(:@db, self)
      return b unless block

      Kuradb.send(:finishing, b, :commit, :discard, &block)
    end

    # A read view of the database at its newest commit: its reads see that
    # state while writers go on. With a block, yields it, releases it when
    # the block ends (however it ends) and answers the block's value;
    # without, answers it, to #release when done. Closing the database
    # releases it too.
    def snapshot
      view = _snapshot
      view.instance_variable_set(:@db, self)
      return view unless block_given?

      begin
        yield view
      ensure
        view.release
      end
    end
  end

  # A serializable transaction, from DBM#transaction: it reads the database
  # as of its start plus its own writes. After #commit or #abort (or the
  # database's close) its calls raise Kuradb::InfeasibleError, except
  # #abort and #active?.
  class Transaction
    # A point in a transaction's writes, from Transaction#savepoint.
    Savepoint = Struct.new(:transaction, :index)

    # The value of +key+ as this transaction sees it, or nil.
    def get(key)
      @db._tx_get(self, key)
    end
    alias [] get

    # Sets +key+ to +value+ in this transaction.
    def set(key, value)
      @db._tx_set(self, key, value)
      self
    end

    def []=(key, value)
      @db._tx_set(self, key, value)
    end

    # Removes +key+ in this transaction; answers whether it was there.
    def remove(key)
      @db._tx_remove(self, key)
    end
    alias delete remove

    # Whether +key+ has a record as this transaction sees it.
    def key?(key)
      @db._tx_key?(self, key)
    end
    alias include? key?

    # Appends +value+ to +key+'s value, after +delimiter+ if there was one.
    def append(key, value, delimiter = "")
      @db._tx_append(self, key, value, delimiter)
      self
    end

    # Adds +delta+ to +key+'s number (+initial+ if absent); answers the new number.
    def increment(key, delta = 1, initial = 0)
      @db._tx_increment(self, key, delta, initial)
    end

    # Every [key, value] this transaction sees (the whole database counts as read).
    def items
      @db._tx_items(self)
    end

    # A point to come back to with #rollback_to: the writes made so far.
    def savepoint
      Savepoint.new(self, @db._tx_savepoint(self))
    end

    # Undoes the writes made since +savepoint+; what was read stays read.
    def rollback_to(savepoint)
      unless savepoint.is_a?(Savepoint) && savepoint.transaction.equal?(self)
        raise ArgumentError, "the savepoint is not one of this transaction's"
      end

      @db._tx_rollback_to(self, savepoint.index)
      self
    end

    # Applies the writes as one unit, or raises Kuradb::ConflictError (and
    # applies nothing) if another commit changed what this transaction
    # read. The transaction is finished either way.
    def commit
      @db._tx_commit(self)
      nil
    end

    # Drops the writes and finishes the transaction (nothing if finished).
    def abort
      @db._tx_abort(self)
      nil
    end

    # The commit's durability: :none, :os or :sync.
    def durability
      _durability.to_sym
    end

    def inspect
      "#<Kuradb::Transaction #{active? ? 'active' : 'finished'} durability=#{durability}>"
    end
  end

  # Blind writes applied as one unit by #commit, from DBM#batch: no reader
  # sees a part of them, and a crash leaves them whole or absent.
  class Batch
    # Sets +key+ to +value+ at the commit.
    def set(key, value)
      _set(key, value)
      self
    end

    def []=(key, value)
      _set(key, value)
    end

    # Removes +key+ at the commit.
    def remove(key)
      _remove(key)
      self
    end
    alias delete remove

    # Appends +value+ to +key+'s value at the commit, after +delimiter+ if there was one.
    def append(key, value, delimiter = "")
      _append(key, value, delimiter)
      self
    end

    # Adds +delta+ to +key+'s number (+initial+ if absent) at the commit.
    def increment(key, delta = 1, initial = 0)
      _increment(key, delta, initial)
      self
    end

    # Applies the writes as one unit; the batch is finished.
    def commit
      @db._batch_commit(self)
      nil
    end

    # The commit's durability: :none, :os or :sync.
    def durability
      _durability.to_sym
    end

    alias length size
  end

  # A read view of the database at one commit, from DBM#snapshot. Each and
  # Enumerable go over its [key, value] pairs, in the database's key order
  # if it has one. After #release (or the database's close) its reads raise
  # Kuradb::InfeasibleError.
  class Snapshot
    include Enumerable

    # The value of +key+ in this view, or nil.
    def get(key)
      @db._snapshot_get(self, key)
    end
    alias [] get

    # Whether +key+ has a record in this view.
    def key?(key)
      !get(key).nil?
    end
    alias include? key?

    # Every key of this view, as an Array.
    def keys
      @db._snapshot_keys(self)
    end

    # Every [key, value] of this view, as an Array.
    def items
      @db._snapshot_items(self)
    end
    alias to_a items

    # Yields each key and value of this view (read when the iteration
    # starts); without a block, answers an Enumerator.
    def each(&block)
      return enum_for(:each) unless block

      items.each(&block)
      self
    end
    alias each_pair each

    # The number of records in this view.
    def count(*args, &block)
      return super if !args.empty? || block

      @db._snapshot_count(self)
    end
    alias size count
    alias length count

    def inspect
      "#<Kuradb::Snapshot #{active? ? 'active' : 'released'}>"
    end
  end
end
