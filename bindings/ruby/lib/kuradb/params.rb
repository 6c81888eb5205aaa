# frozen_string_literal: true

module Kuradb
  # Keyword parameters as the core takes them: name and value as text.
  module Params
    module_function

    # The pairs of +params+ (a Hash of Symbol or String names) as
    # [name, text]: true/false become "true"/"false", numbers their decimal
    # text; a value of any other type raises TypeError naming the parameter.
    def pairs(params)
      params.map do |name, value|
        text = case value
               when String then value
               when Symbol, Integer, Float, true, false then value.to_s
               else
                 raise TypeError, "parameter #{name} must be a String, Symbol, Integer, Float, " \
                                  "true or false, not #{value.class}"
               end
        [name.to_s, text]
      end
    end

    # A true/false parameter given as true, false, nil or its text
    # ("true", "false", "1", "0"); anything else raises ArgumentError.
    def flag(value)
      case value
      when true, "true", "1", 1 then true
      when false, nil, "false", "0", 0 then false
      else raise ArgumentError, "a flag parameter must be true or false, not #{value.inspect}"
      end
    end
  end
end
