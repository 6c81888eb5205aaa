# frozen_string_literal: true

require_relative "lib/kuradb/version"

# The gem of kuradb's Ruby binding. Build the extension first with
# `bash bindings/ruby/build` (cargo; no gem is needed), then `gem build
# kuradb.gemspec` packs lib/ with the built library in it.
Gem::Specification.new do |spec|
  spec.name = "kuradb"
  spec.version = Kuradb::VERSION
  spec.summary = "kuradb, an embedded key-value database (DBM family), and the Tkrzw Ruby API over it"
  spec.description = "Ruby binding of kuradb: Kuradb::DBM in Ruby's style, and `require \"tkrzw\"`, " \
                     "the reference's Ruby API, over the same Rust core."
  spec.authors = ["kuradb developers"]
  spec.license = "Apache-2.0"
  spec.required_ruby_version = ">= 3.0"
  spec.files = Dir["lib/**/*.rb"] + Dir["lib/kuradb/kuradb_ext.{so,bundle}"]
  spec.require_paths = ["lib"]
end
