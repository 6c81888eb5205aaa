# frozen_string_literal: true

module Kuradb
  # The class method +open+ of the classes whose objects are opened and
  # closed (DBM, File, Index): a new object, opened with the arguments as
  # its +open+ takes them (defaults included); with a block, yields it and
  # closes it when the block ends (however it ends), answering the block's
  # value; without, answers the open object.
  module Opening
    def open(*args, **params)
      handle = new
      handle.open(*args, **params)
      return handle unless block_given?

      begin
        yield handle
      ensure
        handle.close
      end
    end
  end
  private_constant :Opening
end
