# frozen_string_literal: true

# kuradb for Ruby: an embedded key-value database of the DBM family.
#
#   require "kuradb"
#   Kuradb::DBM.open("casket.tkh", true) do |db|
#     db["japan"] = "tokyo"
#     db["japan"]             # => "tokyo" (ASCII-8BIT)
#     db.each { |key, value| puts "#{key}: #{value}" }
#   end
#
# Keys and values are Strings taken byte for byte (any encoding); what comes
# back is ASCII-8BIT unless the database was opened with +encoding:+ (for
# example "UTF-8"), which tags returned Strings without transcoding them.
# Errors raise subclasses of Kuradb::Error, one per kind. See docs/ruby.md.
module Kuradb
  # Any error of a kuradb database; #kind names its kind as a Symbol.
  class Error < StandardError
    # The kind of error (:not_found, :duplication, ...), as a Symbol.
    def kind
      :unknown
    end

    # The reference's status code of the error (Tkrzw::Status's codes), as
    # the binding core maps kinds to codes; nil for an error made in Ruby.
    attr_reader :status_code
  end

  {
    NotFoundError: :not_found, # a record, file or other named thing does not exist
    DuplicationError: :duplication, # a record or file exists and was not to be overwritten
    InvalidArgumentError: :invalid_argument, # an argument or parameter is malformed or out of range
    InfeasibleError: :infeasible, # not possible in the current state (a closed database, ...)
    BrokenDataError: :broken_data, # stored data is inconsistent: a corrupt or truncated file
    WouldBlockError: :would_block, # the file is locked by someone else and waiting was refused
    SystemError: :system, # the operating system refused an operation
    UnsupportedError: :unsupported, # not supported by this database or platform
    CanceledError: :canceled, # a callback asked to stop, or failed
    ConflictError: :conflict # a transaction's commit met another commit's change to what it read
  }.each do |name, kind|
    const_set(name, Class.new(Error) { define_method(:kind) { kind } })
  end
end

require "kuradb/kuradb_ext"
require "kuradb/opening"
require "kuradb/dbm"
require "kuradb/transaction"
require "kuradb/async_dbm"
require "kuradb/index"
require "kuradb/file"
require "kuradb/version"
