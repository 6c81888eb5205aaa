# frozen_string_literal: true

# A small program written against tkrzw-ruby's documented API (the style of
# its example1.rb), run unchanged by test_tkrzw.rb with `require "tkrzw"`
# resolving to kuradb's compat layer. It prints what it finds; the test
# compares the output with what the reference's documentation says.
require "tkrzw"

path = ARGV.fetch(0)
dbm = Tkrzw::DBM.new
dbm.open(path, true, truncate: true, num_buckets: 100).or_die

dbm["alpha"] = "one"
dbm["beta"] = "two"
dbm.set("gamma", "three").or_die
p dbm["alpha"]
p dbm["delta"]
p dbm.set("alpha", "uno", false).code == Tkrzw::Status::DUPLICATION_ERROR

dbm.remove("beta") if dbm.include?("beta")
status = Tkrzw::Status.new
p dbm.get("beta", status)
puts status

dbm.each do |key, value|
  p key + ": " + value
end

iter = dbm.make_iterator
iter.first
loop do
  record = iter.get
  break if record.nil?

  puts record.join("=")
  iter.next
end
iter.destruct

puts dbm.to_i
dbm.close.or_die
dbm.destruct
