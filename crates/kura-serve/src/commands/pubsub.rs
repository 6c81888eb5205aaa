//! Publish/subscribe commands: SUBSCRIBE, PSUBSCRIBE, UNSUBSCRIBE,
//! PUNSUBSCRIBE, PUBLISH and PUBSUB (the registry is `crate::pubsub`).

use bytes::Bytes;

use super::{is, unknown_subcommand, wrong_arity, Ctx};
use crate::pattern::KeyPattern;
use crate::pubsub;
use crate::reply::Reply;

/// The commands a RESP2 connection may send while it is subscribed.
pub const ALLOWED_SUBSCRIBED: &[&str] =
    &["subscribe", "psubscribe", "unsubscribe", "punsubscribe", "ping", "quit", "reset"];

/// The reply to a command a subscribed RESP2 connection may not send.
pub fn refused_while_subscribed(name: &str) -> Reply {
    Reply::error(format!(
        "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in \
         this context"
    ))
}

fn confirmation(kind: &'static str, name: Option<Bytes>, count: usize) -> Reply {
    Reply::Push(vec![
        Reply::bulk(kind.as_bytes()),
        name.map_or(Reply::Nil, Reply::Bulk),
        Reply::Int(count as i64),
    ])
}

fn subscribe_to(ctx: &mut Ctx, args: &[Bytes], pattern: bool) -> Reply {
    let session = &mut *ctx.session;
    let mailbox = match &session.mailbox {
        Some(mailbox) => mailbox.clone(),
        None => {
            let (mailbox, inbox) = pubsub::mailbox();
            session.mailbox = Some(mailbox.clone());
            session.inbox = Some(inbox);
            mailbox
        }
    };
    let kind = if pattern { "psubscribe" } else { "subscribe" };
    let mut replies = Vec::with_capacity(args.len() - 1);
    for name in &args[1..] {
        let count = ctx.server.pubsub.subscribe(session.id, &mailbox, name, pattern);
        session.subscribed = count;
        replies.push(confirmation(kind, Some(name.clone()), count));
    }
    Reply::Many(replies)
}

fn unsubscribe_from(ctx: &mut Ctx, args: &[Bytes], pattern: bool) -> Reply {
    let session = &mut *ctx.session;
    let pubsub = &ctx.server.pubsub;
    let kind = if pattern { "punsubscribe" } else { "unsubscribe" };
    let names = if args.len() > 1 { args[1..].to_vec() } else { pubsub.subscriptions(session.id, pattern) };
    if names.is_empty() {
        let (channels, patterns) = pubsub.counts(session.id);
        return confirmation(kind, None, channels + patterns);
    }
    let mut replies = Vec::with_capacity(names.len());
    for name in names {
        let count = pubsub.unsubscribe(session.id, &name, pattern);
        session.subscribed = count;
        replies.push(confirmation(kind, Some(name), count));
    }
    Reply::Many(replies)
}

pub fn subscribe(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    subscribe_to(ctx, args, false)
}

pub fn psubscribe(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    subscribe_to(ctx, args, true)
}

pub fn unsubscribe(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    unsubscribe_from(ctx, args, false)
}

pub fn punsubscribe(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    unsubscribe_from(ctx, args, true)
}

pub fn publish(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    Reply::Int(ctx.server.pubsub.publish(&args[1], &args[2]) as i64)
}

/// PUBSUB CHANNELS [pattern], PUBSUB NUMSUB [channel…], PUBSUB NUMPAT.
pub fn pubsub(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    let registry = &ctx.server.pubsub;
    let sub = &args[1];
    if is(sub, "CHANNELS") {
        let pattern = match args.len() {
            2 => None,
            3 => match KeyPattern::new(&args[2]) {
                Ok(pattern) => Some(pattern),
                Err(e) => return Reply::error(e),
            },
            _ => return wrong_arity("pubsub|channels"),
        };
        Reply::Array(registry.channels(pattern.as_ref()).into_iter().map(Reply::Bulk).collect())
    } else if is(sub, "NUMSUB") {
        let pairs = args[2..]
            .iter()
            .map(|channel| (Reply::Bulk(channel.clone()), Reply::Int(registry.numsub(channel) as i64)))
            .collect();
        Reply::Map(pairs)
    } else if is(sub, "NUMPAT") {
        if args.len() != 2 {
            return wrong_arity("pubsub|numpat");
        }
        Reply::Int(registry.numpat() as i64)
    } else {
        unknown_subcommand("pubsub", sub)
    }
}
