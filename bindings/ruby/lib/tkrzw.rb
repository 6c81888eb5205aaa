# frozen_string_literal: true

# The Ruby API of the reference implementation (Tkrzw's tkrzw-ruby) over
# kuradb, so that a program written for it runs unchanged with this lib
# directory on its load path:
#
#   require "tkrzw"
#   include Tkrzw
#   dbm = DBM.new
#   dbm.open("casket.tkh", true, truncate: true, num_buckets: 100).or_die
#   dbm["first"] = "hop"
#   dbm.each { |key, value| p key + ": " + value }
#   dbm.close
#
# Methods answer a Status where the reference does, and a value or nil
# (with an optional Status argument to receive the outcome) where it does.
# Parameters keep the reference's names and values; "concurrent" is
# accepted and ignored (see docs/ruby.md on the VM lock). The database
# files are kuradb's, not the reference's. Classes of the reference not
# listed in docs/ruby.md (Index, File, TextFile) are missing: their names
# are not defined, so a program using them fails at once with NameError
# rather than misbehaving.

require "kuradb"
require "tkrzw/status"
require "tkrzw/utility"
require "tkrzw/dbm"
require "tkrzw/iterator"
require "tkrzw/async_dbm"
