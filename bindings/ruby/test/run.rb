# frozen_string_literal: true

# Runs every test file of the binding: ruby -I bindings/ruby/lib bindings/ruby/test/run.rb
Dir[File.join(__dir__, "test_*.rb")].sort.each { |file| require file }
