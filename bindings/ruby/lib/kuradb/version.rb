# frozen_string_literal: true

module Kuradb
  # The version of the Ruby binding (the same as kuradb's crates).
  VERSION = "0.1.0"
end
