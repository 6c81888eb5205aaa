# frozen_string_literal: true

module Tkrzw
  # The outcome of an operation: a code and a message, as the reference's.
  class Status
    SUCCESS = 0
    UNKNOWN_ERROR = 1
    SYSTEM_ERROR = 2
    NOT_IMPLEMENTED_ERROR = 3
    PRECONDITION_ERROR = 4
    INVALID_ARGUMENT_ERROR = 5
    CANCELED_ERROR = 6
    NOT_FOUND_ERROR = 7
    PERMISSION_ERROR = 8
    INFEASIBLE_ERROR = 9
    DUPLICATION_ERROR = 10
    BROKEN_DATA_ERROR = 11
    NETWORK_ERROR = 12
    APPLICATION_ERROR = 13

    NAMES = %w[SUCCESS UNKNOWN_ERROR SYSTEM_ERROR NOT_IMPLEMENTED_ERROR PRECONDITION_ERROR
               INVALID_ARGUMENT_ERROR CANCELED_ERROR NOT_FOUND_ERROR PERMISSION_ERROR
               INFEASIBLE_ERROR DUPLICATION_ERROR BROKEN_DATA_ERROR NETWORK_ERROR
               APPLICATION_ERROR].freeze
    private_constant :NAMES

    # The name of +code+ ("SUCCESS", "NOT_FOUND_ERROR", ...).
    def self.code_name(code)
      NAMES.fetch(code, "unknown")
    end

    def initialize(code = SUCCESS, message = "")
      set(code, message)
    end

    # Sets the code and the message.
    def set(code = SUCCESS, message = "")
      @code = code.to_i
      @message = message.to_s
      nil
    end

    # Takes +rhs+'s code and message if this is a success.
    def join(rhs)
      set(rhs.code, rhs.message) if ok?
      nil
    end

    attr_reader :code, :message

    def ok?
      @code == SUCCESS
    end

    # Raises StatusException unless this is a success.
    def or_die
      raise StatusException, self unless ok?

      nil
    end

    def to_s
      @message.empty? ? Status.code_name(@code) : "#{Status.code_name(@code)}: #{@message}"
    end

    def to_i
      @code
    end

    def inspect
      "#<Tkrzw::Status: #{self}>"
    end

    # Equal to a Status or an Integer of the same code.
    def ==(other)
      case other
      when Status then @code == other.code
      when Integer then @code == other
      else false
      end
    end

    def !=(other)
      !(self == other)
    end
  end

  # An exception carrying a Status (Status#or_die raises it).
  class StatusException < RuntimeError
    attr_reader :status

    def initialize(status)
      @status = status
      super(status.to_s)
    end

    def inspect
      "#<Tkrzw::StatusException: #{@status}>"
    end
  end

  # kuradb's exceptions as the reference's status codes.
  module StatusOf
    CODES = {
      Kuradb::NotFoundError => Status::NOT_FOUND_ERROR,
      Kuradb::DuplicationError => Status::DUPLICATION_ERROR,
      Kuradb::InvalidArgumentError => Status::INVALID_ARGUMENT_ERROR,
      Kuradb::InfeasibleError => Status::INFEASIBLE_ERROR,
      Kuradb::BrokenDataError => Status::BROKEN_DATA_ERROR,
      Kuradb::WouldBlockError => Status::INFEASIBLE_ERROR,
      Kuradb::SystemError => Status::SYSTEM_ERROR,
      Kuradb::UnsupportedError => Status::NOT_IMPLEMENTED_ERROR,
      Kuradb::CanceledError => Status::CANCELED_ERROR
    }.freeze

    module_function

    # The Status of an exception: kuradb's by the code the binding core
    # gives its kind (without the kind's
    # name, which the code says), TypeError, ArgumentError and RangeError
    # (a number too large for an offset) as invalid arguments, anything
    # else as an application error.
    def status_of(error)
      case error
      when Kuradb::Error
        # The binding core's code of the error's kind, where the native
        # library raised it; else by class.
        code = error.status_code || CODES.fetch(error.class, Status::UNKNOWN_ERROR)
        Status.new(code, error.message.sub(/\A[a-z -]+: /, ""))
      when TypeError, ArgumentError, RangeError then Status.new(Status::INVALID_ARGUMENT_ERROR, error.message)
      else Status.new(Status::APPLICATION_ERROR, error.message)
      end
    end

    # Copies +outcome+ into the caller's +status+, if one was given.
    def report(status, outcome)
      status&.set(outcome.code, outcome.message)
    end
  end
  private_constant :StatusOf

  # What the classes over kuradb's share: arguments as the strings the
  # engine takes, and a block's outcome as a Status.
  module Calls
    private

    # +data+ as a String: itself, or its to_s, as the reference converts.
    def str(data)
      data.is_a?(String) ? data : data.to_s
    end

    # Runs the block and answers its outcome as a Status: OK, or the
    # Status of the kuradb error, TypeError or ArgumentError (or one of
    # the +also+ classes) it raised.
    def call(*also)
      yield
      Status.new
    rescue Kuradb::Error, TypeError, ArgumentError, *also => e
      StatusOf.status_of(e)
    end
  end
  private_constant :Calls
end
