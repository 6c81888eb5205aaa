# frozen_string_literal: true

require "etc"

module Tkrzw
  # Library utilities, as the reference's: its hash functions bit for bit,
  # the edit distance, memory figures and the integer limits.
  class Utility
    # kuradb's version (the reference reports its own here).
    VERSION = Kuradb::Utility::CORE_VERSION
    # The operating system's name as the reference spells it ("Linux", ...).
    OS_NAME = case RbConfig::CONFIG["host_os"]
              when /linux/ then "Linux"
              when /darwin/ then "macOS"
              when /freebsd/ then "FreeBSD"
              when /mswin|mingw|cygwin/ then "Windows"
              else RbConfig::CONFIG["host_os"]
              end
    # The size of a memory page.
    PAGE_SIZE = begin
      Etc.sysconf(Etc::SC_PAGESIZE)
    rescue StandardError
      4096
    end
    INT32MIN = -2**31
    INT32MAX = 2**31 - 1
    UINT32MAX = 2**32 - 1
    INT64MIN = -2**63
    INT64MAX = 2**63 - 1
    UINT64MAX = 2**64 - 1

    # The machine's memory in bytes.
    def self.get_memory_capacity
      Kuradb::Utility.memory_capacity
    end

    # The process's resident memory in bytes.
    def self.get_memory_usage
      Kuradb::Utility.memory_usage
    end

    # The hash database's hash of +data+ modulo +num_buckets+ (nil: 2**64).
    def self.primary_hash(data, num_buckets = nil)
      Kuradb::Utility.primary_hash(data.to_s, modulus(num_buckets))
    end

    # The sharding hash of +data+ modulo +num_shards+ (nil: 2**64).
    def self.secondary_hash(data, num_shards = nil)
      Kuradb::Utility.secondary_hash(data.to_s, modulus(num_shards))
    end

    # The Levenshtein distance of +a+ and +b+, in bytes, or in Unicode
    # characters with +utf+.
    # +num+ as 8 big-endian bytes (a binary String).
    def self.serialize_int(num)
      Kuradb::Utility.serialize_int(Integer(num))
    end

    # The integer of a big-endian binary String (its first 8 bytes at most).
    def self.deserialize_int(data)
      Kuradb::Utility.deserialize_int(data.to_s)
    end

    # +num+ as 8 big-endian bytes (an IEEE double, a binary String).
    def self.serialize_float(num)
      Kuradb::Utility.serialize_float(Float(num))
    end

    # The number of a big-endian IEEE single or double; NaN for any other length.
    def self.deserialize_float(data)
      Kuradb::Utility.deserialize_float(data.to_s)
    end

    def self.edit_distance_lev(a, b, utf = false)
      Kuradb::Utility.edit_distance_lev(a.to_s, b.to_s, utf ? true : false)
    end

    # nil and 2**64 are the whole range, which the core spells 0.
    def self.modulus(value)
      value.nil? || value >= 2**64 ? 0 : value
    end
    private_class_method :modulus
  end
end
