# frozen_string_literal: true

module Tkrzw
  # The reference's keyword parameters in kuradb's terms, by the binding
  # core (the translation the Python and Java layers share): values as
  # text, +concurrent+ read by Kuradb::DBM only, colon-separated access
  # options, RECORD_COMP_AES folded into +cipher_key+, RC4 refused
  # (Kuradb::InvalidArgumentError), a +max_page_size+ under 64 raised to 64.
  module TkrzwParams
    module_function

    # The parameters a call was given: a Hash passed as the last positional
    # argument, as the reference's own test and examples pass them, and
    # keywords, merged (keywords win). Anything but a Hash or nil raises
    # TypeError, which the callers answer as INVALID_ARGUMENT_ERROR.
    def given(params, keywords)
      return keywords if params.nil?
      raise TypeError, "parameters must be a Hash, not #{params.class}" unless params.is_a?(Hash)

      params.merge(keywords)
    end

    # The parameters of an open of +path+, by the binding core: translated,
    # waiting for another process's lock unless told +no_wait+, as the
    # reference does (kuradb's own API fails at once), without
    # +key_comparator+ when reopening an existing tree (the reference reads
    # the order from the file; kuradb's own API refuses another one), with
    # +concurrent+ kept for Kuradb::DBM, which decides by it whether calls
    # release the VM lock.
    def open(path, params)
      pairs = Kuradb._compat_open_params(path.to_s, Kuradb::Params.pairs(params))
      out = pairs.to_h { |name, value| [name.to_sym, value] }
      concurrent = params.key?(:concurrent) ? params[:concurrent] : params["concurrent"]
      out[:concurrent] = concurrent unless concurrent.nil?
      out
    end

    # The parameters of a rebuild, as keywords: translated, without the
    # tuning of a running database (+fbp_capacity+, ...), which kuradb takes
    # at open.
    def rebuild(params)
      Kuradb._rebuild_params(Kuradb::Params.pairs(params)).to_h { |name, value| [name.to_sym, value] }
    end
  end
end
