//! The Redis commands `kura serve` deliberately does not serve, by family,
//! so that a client meeting one is told so, and where to read why, rather
//! than answered as if it had mistyped. A name in no family still gets
//! Redis's "unknown command".

/// Families of commands not served: what the family is, and its commands.
const FAMILIES: &[(&str, &[&str])] = &[
    (
        "it runs no scripts",
        &["eval", "evalsha", "eval_ro", "evalsha_ro", "script", "function", "fcall", "fcall_ro"],
    ),
    (
        "it has no sharded publish/subscribe, which is Redis Cluster's (PUBLISH and SUBSCRIBE are served)",
        &["spublish", "ssubscribe", "sunsubscribe"],
    ),
    (
        "its values are strings, not hashes",
        &[
            "hset",
            "hsetnx",
            "hget",
            "hmset",
            "hmget",
            "hgetall",
            "hdel",
            "hexists",
            "hincrby",
            "hincrbyfloat",
            "hkeys",
            "hvals",
            "hlen",
            "hstrlen",
            "hscan",
            "hrandfield",
        ],
    ),
    (
        "its values are strings, not lists",
        &[
            "lpush",
            "rpush",
            "lpushx",
            "rpushx",
            "lpop",
            "rpop",
            "lrange",
            "llen",
            "lindex",
            "lset",
            "lrem",
            "ltrim",
            "linsert",
            "lpos",
            "lmove",
            "blmove",
            "blpop",
            "brpop",
            "rpoplpush",
            "brpoplpush",
            "lmpop",
            "blmpop",
        ],
    ),
    (
        "its values are strings, not sets",
        &[
            "sadd",
            "srem",
            "smembers",
            "sismember",
            "smismember",
            "scard",
            "spop",
            "srandmember",
            "sinter",
            "sintercard",
            "sinterstore",
            "sunion",
            "sunionstore",
            "sdiff",
            "sdiffstore",
            "smove",
            "sscan",
        ],
    ),
    (
        "its values are strings, not sorted sets",
        &[
            "zadd",
            "zrem",
            "zrange",
            "zrangestore",
            "zrangebyscore",
            "zrevrangebyscore",
            "zrangebylex",
            "zrevrangebylex",
            "zrevrange",
            "zscore",
            "zmscore",
            "zincrby",
            "zcard",
            "zcount",
            "zlexcount",
            "zrank",
            "zrevrank",
            "zscan",
            "zpopmin",
            "zpopmax",
            "bzpopmin",
            "bzpopmax",
            "zmpop",
            "bzmpop",
            "zunion",
            "zunionstore",
            "zinter",
            "zinterstore",
            "zintercard",
            "zdiff",
            "zdiffstore",
            "zremrangebyscore",
            "zremrangebyrank",
            "zremrangebylex",
            "zrandmember",
        ],
    ),
    (
        "its values are strings, not streams",
        &[
            "xadd",
            "xread",
            "xreadgroup",
            "xrange",
            "xrevrange",
            "xlen",
            "xdel",
            "xtrim",
            "xgroup",
            "xack",
            "xpending",
            "xclaim",
            "xautoclaim",
            "xinfo",
            "xsetid",
        ],
    ),
    (
        "it has no geo, bitmap or HyperLogLog values",
        &[
            "geoadd",
            "geodist",
            "geohash",
            "geopos",
            "georadius",
            "georadiusbymember",
            "geosearch",
            "geosearchstore",
            "setbit",
            "getbit",
            "bitcount",
            "bitop",
            "bitpos",
            "bitfield",
            "bitfield_ro",
            "pfadd",
            "pfcount",
            "pfmerge",
        ],
    ),
    ("it is not a Redis Cluster (shard it with a proxy)", &["cluster", "readonly", "readwrite", "asking"]),
];

/// Where the documentation says what is not served, and why.
const SECTION: &str = "docs/serve.md, \"Not served\"";

/// The error for `name` if it is a command deliberately not served.
pub fn refusal(name: &[u8]) -> Option<String> {
    let (why, _) =
        FAMILIES.iter().find(|(_, names)| names.iter().any(|n| n.as_bytes().eq_ignore_ascii_case(name)))?;
    Some(format!(
        "ERR kura serve does not serve {}: {why} (see {SECTION})",
        String::from_utf8_lossy(name).to_ascii_uppercase()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::lookup;

    #[test]
    fn a_command_not_served_is_named_with_the_reason_and_the_section() {
        let said = refusal(b"LPush").expect("a list command");
        assert_eq!(
            said,
            "ERR kura serve does not serve LPUSH: its values are strings, not lists (see docs/serve.md, \
             \"Not served\")"
        );
        assert!(refusal(b"lpushh").is_none() && refusal(b"get").is_none());
    }

    #[test]
    fn no_command_of_the_list_is_served() {
        for (_, names) in FAMILIES {
            for name in *names {
                assert!(lookup(name.as_bytes()).is_none(), "{name} is served: take it off the list");
                assert_eq!(name.to_ascii_lowercase(), *name);
            }
        }
    }
}
