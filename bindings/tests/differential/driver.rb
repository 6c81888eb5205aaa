# frozen_string_literal: true

# The differential script's driver for Ruby's Tkrzw layer:
# ruby -I bindings/ruby/lib driver.rb SCRIPT DIR
require "tkrzw"

# One spelling for every driver: lists joined by commas, maps sorted by key.
def show(answer)
  case answer
  when nil then "-"
  when Hash then answer.sort.map { |k, v| "#{show(k)}=#{show(v)}" }.join(",")
  when Array then answer.map { |a| show(a) }.join(",")
  else answer.to_s
  end
end

# "k=v,k=-,k=*": "-" is absent, "*" any value.
def pairs(spec)
  spec.split(",").map do |item|
    key, value = item.split("=", 2)
    [key, { "-" => nil, "*" => Tkrzw::DBM::ANY_DATA }.fetch(value, value)]
  end
end

def records(args)
  args.to_h { |a| a.split("=", 2) }.transform_keys(&:to_sym)
end

script, dir = ARGV
dbm = Tkrzw::DBM.new
other = Tkrzw::DBM.new
other.open("#{dir}/other.tks", true)
other.set("k", "from-b")
other.set("only-b", "1")
other.close
index = Tkrzw::Index.new
iter = nil
File.foreach(script) do |raw|
  line = raw.strip
  next if line.empty? || line.start_with?("#")

  # "! CALL": kuradb answers differently from the reference on purpose.
  line = line.delete_prefix("! ")

  words = line.gsub("PATH", dir).split(/ /)
  op = words[0]
  args = words[1..].map { |w| w == "-" ? nil : w }
  shown = "#{op} #{words[1..].join(' ').gsub(dir, 'PATH')} =>"
  status = Tkrzw::Status.new
  answer = nil
  begin
    case op
    when "open"
      status = dbm.open(args[0], args[1] == "true", **records(args[2..]))
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
      status = dbm.rebuild(**records(args))
      answer = dbm.count
    when "pop_first"
      record = dbm.pop_first(status)
      answer = record&.join(":")
    when "pop_first_hex"
      record = dbm.pop_first(status)
      answer = record && "#{record[0].unpack1('H*')}:#{record[1]}"
    when "set_multi" then status = dbm.set_multi(args[0] == "true", **records(args[1..]))
    when "get_multi" then answer = dbm.get_multi(*args)
    when "remove_multi" then status = dbm.remove_multi(*args)
    when "append_multi" then status = dbm.append_multi(args[0], **records(args[1..]))
    when "compare_exchange_multi" then status = dbm.compare_exchange_multi(pairs(args[0]), pairs(args[1]))
    when "rekey" then status = dbm.rekey(args[0], args[1], args[2] == "true", args[3] == "true")
    when "set_and_get" then status, answer = dbm.set_and_get(args[0], args[1], args[2] == "true")
    when "compare_exchange_and_get"
      expected = args[1] == "*" ? Tkrzw::DBM::ANY_DATA : args[1]
      status, answer = dbm.compare_exchange_and_get(args[0], expected, args[2])
    when "remove_and_get" then status, answer = dbm.remove_and_get(args[0])
    when "contains" then answer = dbm.include?(args[0])
    when "file_path" then answer = dbm.file_path.to_s.gsub(dir, "PATH")
    when "file_size_positive" then answer = (dbm.file_size || 0).positive?
    when "should_be_rebuilt" then answer = dbm.should_be_rebuilt?
    when "inspect" then answer = dbm.inspect_details[args[0]]
    when "clear" then status = dbm.clear
    when "push_last" then status = dbm.push_last(args[0], args[1].to_f)
    when "search"
      answer = dbm.search(args[0], args[1], args[2].to_i)
      answer = answer.sort if args[3] == "sorted"
    when "export_flat", "import_flat"
      file = Tkrzw::File.new
      file.open(args[0], op == "export_flat", truncate: op == "export_flat")
      status = op == "export_flat" ? dbm.export_to_flat_records(file) : dbm.import_from_flat_records(file)
      file.close
    when "export_keys"
      file = Tkrzw::File.new
      file.open(args[0], true, truncate: true)
      status = dbm.export_keys_as_lines(file)
      file.close
      answer = File.read(args[0]).split("\n").sort
    when "process"
      seen = []
      status = dbm.process(args[0], args.size < 3) do |_key, value|
        seen << value
        { "noop" => nil, "remove" => false }.fetch(args[1], args[1])
      end
      answer = seen
    when "process_multi"
      seen = []
      fates = pairs(args[0]).to_h
      status = dbm.process_multi(fates.keys, args.size < 2) do |key, value|
        seen << "#{show(key)}=#{show(value)}"
        { "noop" => nil, "remove" => false }.fetch(fates[key], fates[key])
      end
      answer = seen.sort
    when "process_each"
      seen = []
      status = dbm.process_each(args.size < 2) do |key, value|
        seen << "#{show(key)}=#{show(value)}"
        { "noop" => nil, "remove" => false }.fetch(args[0], args[0])
      end
      answer = seen.sort
    when "iter" then iter = dbm.make_iterator
    when "iter_all"
      cursor = dbm.make_iterator
      cursor.first
      answer = []
      while (record = cursor.get)
        answer << record.join(":")
        cursor.next
      end
      answer.sort!
    when "iter_first" then status = iter.first
    when "iter_last" then status = iter.last
    when "iter_jump" then status = iter.jump(args[0])
    when "iter_jump_lower" then status = iter.jump_lower(args[0], args[1] == "true")
    when "iter_jump_upper" then status = iter.jump_upper(args[0], args[1] == "true")
    when "iter_next" then status = iter.next
    when "iter_previous" then status = iter.previous
    when "iter_get" then answer = iter.get(status)&.join(":")
    when "iter_step" then answer = iter.step(status)&.join(":")
    when "iter_set" then status = iter.set(args[0])
    when "iter_remove" then status = iter.remove
    when "index_open" then status = index.open(args[0], true, truncate: true)
    when "index_close" then status = index.close
    when "index_add" then status = index.add(args[0], args[1])
    when "index_remove" then status = index.remove(args[0], args[1])
    when "index_get" then answer = index.get_values(args[0], args[1].to_i)
    when "index_count" then answer = index.count
    when "index_list"
      cursor = index.make_iterator
      cursor.first
      answer = []
      while (record = cursor.get)
        answer << record.join(":")
        cursor.next
      end
    when "edit_distance" then answer = Tkrzw::Utility.edit_distance_lev(args[0].to_s, args[1].to_s)
    when "serialize_int"
      data = Tkrzw::Utility.serialize_int(args[0].to_i)
      answer = "#{data.unpack1('H*')}/#{Tkrzw::Utility.deserialize_int(data)}"
    when "serialize_float"
      data = Tkrzw::Utility.serialize_float(args[0].to_f)
      answer = "#{data.unpack1('H*')}/#{Tkrzw::Utility.deserialize_float(data)}"
    when "hashes"
      answer = [Tkrzw::Utility.primary_hash(args[0]), Tkrzw::Utility.primary_hash(args[0], args[1].to_i),
                Tkrzw::Utility.secondary_hash(args[0], args[1].to_i)]
    when "version_format" then answer = Tkrzw::Utility::VERSION.match?(/\A[0-9]+\.[0-9]+\.[0-9]+\z/)
    when "status_string" then answer = (args[1] ? Tkrzw::Status.new(args[0].to_i, args[1]) : Tkrzw::Status.new(args[0].to_i)).to_s
    when "index_contains" then answer = index.include?(args[0], args[1])
    when "index_walk"
      cursor = index.make_iterator
      answer = args.map do |move|
        step, at = move.split("=", 2)
        step == "jump" ? cursor.jump(*at.split(":")) : cursor.public_send(step.to_sym)
        cursor.get&.join(":") || "-"
      end
    when "status_names" then answer = (0...args[0].to_i).map { |code| Tkrzw::Status.code_name(code) }
    else raise ArgumentError, "unknown call #{op}"
    end
  rescue RuntimeError, TypeError
    # The languages raise differently; that it raised is what compares.
    puts "#{shown} RAISES"
    next
  end
  puts "#{shown} #{Tkrzw::Status.code_name(status.code)} #{show(answer)}"
end
