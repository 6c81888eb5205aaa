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
# Parameters keep the reference's names and values; "concurrent" runs the
# calls that run no Ruby code without the VM lock (docs/ruby.md, "Threads
# and the VM lock"). The database and index files are kuradb's, not the
# reference's.

require "kuradb"
require "tkrzw/status"
require "tkrzw/params"
require "tkrzw/utility"
require "tkrzw/dbm"
require "tkrzw/iterator"
require "tkrzw/async_dbm"
require "tkrzw/file"
require "tkrzw/index"
