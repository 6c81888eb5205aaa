# frozen_string_literal: true

# Shared set-up of the binding's tests: a temporary directory per test.
require "fileutils"
require "test/unit"
require "tmpdir"
require "kuradb"

module TempDir
  def setup
    @dir = Dir.mktmpdir("kuradb-ruby-")
  end

  def teardown
    FileUtils.rm_rf(@dir)
  end

  def path(name)
    File.join(@dir, name)
  end
end
