# bash completion for the oiw tools (installed as share/bash-completion/completions/<tool>).
# Options come from the tool's own --help (a subcommand's for gguf-inspect diff|hash|report,
# gguf-prune-vocab tokenize and oiw4-check bench), presets and types from gguf-requant's list of
# valid names; anything else completes as a file name.

# The words after "valid:" in the one-line error for an unknown preset (or type).
_oiw_valid_names() {
    local msg
    msg=$("$@" 2>&1 >/dev/null)
    msg=${msg#*valid: }
    printf '%s\n' "${msg%%;*}" | tr -d ')'
}

_oiw_tool() {
    local cmd=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local requant=gguf-requant
    [[ $cmd == */* ]] && requant=${cmd%/*}/gguf-requant
    case $prev in
        --preset)
            COMPREPLY=($(compgen -W "$(_oiw_valid_names "$requant" x y --preset '?')" -- "$cur"))
            return ;;
        --output-tensor-type | --token-embedding-type | --type)
            COMPREPLY=($(compgen -W "$(_oiw_valid_names "$requant" x y --preset Q8_0 --output-tensor-type '?')" \
                -- "$cur"))
            return ;;
    esac
    if [[ $cur == -* ]]; then
        local help
        if ((COMP_CWORD > 1)) && [[ ${COMP_WORDS[1]} =~ ^(diff|hash|report|tokenize|bench)$ ]]; then
            help=$("$cmd" "${COMP_WORDS[1]}" --help 2>/dev/null)
        else
            help=$("$cmd" --help 2>/dev/null)
        fi
        COMPREPLY=($(compgen -W "$(grep -oE -- '(^|[ ,])--?[A-Za-z][A-Za-z0-9-]*' <<<"$help" | sed 's/^[ ,]//' |
            sort -u)" -- "$cur"))
        return
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
}

complete -o filenames -o bashdefault -F _oiw_tool \
    gguf-inspect gguf-requant gguf-plan gguf-edit gguf-synth gguf-prune-vocab gguf-convert gguf-eval oiw4-convert \
    oiw4-check
