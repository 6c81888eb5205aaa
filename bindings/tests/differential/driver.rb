# frozen_string_literal: true

# The differential script's driver for Ruby's Tkrzw layer:
# ruby -I bindings/ruby/lib driver.rb SCRIPT DIR
require "tkrzw"

script, dir = ARGV
dbm = Tkrzw::DBM.new
other = Tkrzw::DBM.new
other.open("#{dir}/other.tks", true)
other.set("k", "from-b")
other.set("only-b", "1")
other.close
File.foreach(script) do |raw|
  line = raw.strip
  next if line.empty? || line.start_with?("#")

  words = line.gsub("PATH", dir).split(" ")
  op = words[0]
  args = words[1..].map { |w| w == "-" ? nil : w }
  status = Tkrzw::Status.new
  answer = nil
  case op
  when "open"
    params = args[2..].to_h { |a| a.split("=", 2) }.transform_keys(&:to_sym)
    status = dbm.open(args[0], args[1] == "true", **params)
  when "close" then status = dbm.close
  when "count" then answer = dbm.count
  when "set" then status = dbm.set(args[0], args[1], args[2] == "true")
  when "get" then answer = dbm.get(args[0], status)
  when "append" then status = dbm.append(args[0], args[1], args[2])
  when "increment" then answer = dbm.increment(args[0], args[1].to_i, args[2].to_i, status)
  when "compare_exchange" then status = dbm.compare_exchange(args[0], args[1], args[2])
  when "remove" then status = dbm.remove(args[0])
  when "synchronize" then status = dbm.synchronize(args[0] == "true")
  when "synchronize_with"
    status = dbm.synchronize(false, merge: args[0], reducer: "ReduceToFirst")
    answer = dbm.count
  when "rebuild"
    status = dbm.rebuild(**args.to_h { |a| a.split("=", 2) }.transform_keys(&:to_sym))
    answer = dbm.count
  when "pop_first"
    record = dbm.pop_first(status)
    answer = record && record.join(":")
  else raise ArgumentError, "unknown call #{op}"
  end
  shown = answer.nil? ? "-" : answer.to_s
  puts "#{op} #{words[1..].join(' ').gsub(dir, 'PATH')} => #{Tkrzw::Status.code_name(status.code)} #{shown}"
end
