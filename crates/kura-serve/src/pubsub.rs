//! Publish/subscribe: who listens to which channel or pattern, and the
//! mailbox through which PUBLISH hands a message to each listener's
//! connection, which writes it between its own replies.
//!
//! Messages live in memory only, as in Redis: a client that is not
//! subscribed when a message is published never sees it. A subscriber
//! that reads more slowly than messages come would make the server hold
//! them all; past [`MAX_PENDING_BYTES`] of messages not yet written, its
//! connection is closed (Redis's `client-output-buffer-limit pubsub`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::RwLock;
use tokio::sync::mpsc;

use crate::pattern::KeyPattern;
use crate::reply::Reply;

/// The most bytes of messages waiting to be written to one subscriber.
pub const MAX_PENDING_BYTES: usize = 32 << 20;

/// One published message, on its way to a subscriber.
#[derive(Debug)]
pub struct Message {
    /// The pattern it matched, for a PSUBSCRIBE; `None` for a SUBSCRIBE.
    pub pattern: Option<Bytes>,
    /// The channel it was published to.
    pub channel: Bytes,
    /// What was published.
    pub payload: Bytes,
}

impl Message {
    /// The frame a subscriber receives: `message channel payload`, or
    /// `pmessage pattern channel payload`.
    pub fn into_reply(self) -> Reply {
        match self.pattern {
            None => Reply::Push(vec![
                Reply::bulk(&b"message"[..]),
                Reply::Bulk(self.channel),
                Reply::Bulk(self.payload),
            ]),
            Some(pattern) => Reply::Push(vec![
                Reply::bulk(&b"pmessage"[..]),
                Reply::Bulk(pattern),
                Reply::Bulk(self.channel),
                Reply::Bulk(self.payload),
            ]),
        }
    }

    fn size(&self) -> usize {
        self.channel.len() + self.payload.len() + self.pattern.as_ref().map_or(0, Bytes::len) + 64
    }
}

/// The sending side of a subscriber's mailbox.
#[derive(Clone)]
pub struct Mailbox {
    tx: mpsc::UnboundedSender<Message>,
    /// Bytes of messages sent and not yet taken by the connection.
    pending: Arc<AtomicUsize>,
    /// Set once the subscriber fell too far behind: its connection closes.
    overflowed: Arc<AtomicBool>,
}

/// The receiving side of a subscriber's mailbox, held by its connection.
pub struct Inbox {
    rx: mpsc::UnboundedReceiver<Message>,
    pending: Arc<AtomicUsize>,
    overflowed: Arc<AtomicBool>,
}

/// A new mailbox and its inbox.
pub fn mailbox() -> (Mailbox, Inbox) {
    let (tx, rx) = mpsc::unbounded_channel();
    let pending = Arc::new(AtomicUsize::new(0));
    let overflowed = Arc::new(AtomicBool::new(false));
    (
        Mailbox { tx, pending: Arc::clone(&pending), overflowed: Arc::clone(&overflowed) },
        Inbox { rx, pending, overflowed },
    )
}

impl Mailbox {
    /// Hands `message` over; false if the subscriber is gone or too far behind.
    fn send(&self, message: Message) -> bool {
        let size = message.size();
        if self.pending.fetch_add(size, Relaxed) + size > MAX_PENDING_BYTES {
            self.pending.fetch_sub(size, Relaxed);
            self.overflowed.store(true, Relaxed);
            // Wakes the connection, which finds the flag and closes.
            let _ = self.tx.send(Message { pattern: None, channel: Bytes::new(), payload: Bytes::new() });
            return false;
        }
        self.tx.send(message).is_ok()
    }
}

impl Inbox {
    /// The next message; `None` once every mailbox is dropped. Waits.
    pub async fn recv(&mut self) -> Option<Message> {
        let message = self.rx.recv().await?;
        self.pending.fetch_sub(message.size().min(self.pending.load(Relaxed)), Relaxed);
        Some(message)
    }

    /// A message already waiting, if any.
    pub fn try_recv(&mut self) -> Option<Message> {
        let message = self.rx.try_recv().ok()?;
        self.pending.fetch_sub(message.size().min(self.pending.load(Relaxed)), Relaxed);
        Some(message)
    }

    /// Whether the subscriber fell too far behind and must be disconnected.
    pub fn overflowed(&self) -> bool {
        self.overflowed.load(Relaxed)
    }
}

/// A pattern subscription: the pattern compiled, and its subscribers.
struct PatternEntry {
    /// `None` for a pattern that is no valid glob (it matches nothing).
    matcher: Option<KeyPattern>,
    subscribers: BTreeMap<u64, Mailbox>,
}

/// What one client listens to.
#[derive(Default)]
struct Listening {
    channels: BTreeSet<Bytes>,
    patterns: BTreeSet<Bytes>,
}

#[derive(Default)]
struct Registry {
    channels: HashMap<Bytes, BTreeMap<u64, Mailbox>>,
    patterns: BTreeMap<Bytes, PatternEntry>,
    clients: HashMap<u64, Listening>,
}

/// The subscriptions of every client of a server.
#[derive(Default)]
pub struct PubSub {
    registry: RwLock<Registry>,
}

impl PubSub {
    /// Subscribes client `id` to `channel` (or, with `pattern`, to every
    /// channel the glob matches); the number of its subscriptions after.
    pub fn subscribe(&self, id: u64, mailbox: &Mailbox, name: &Bytes, pattern: bool) -> usize {
        let mut registry = self.registry.write();
        if pattern {
            registry
                .patterns
                .entry(name.clone())
                .or_insert_with(|| PatternEntry {
                    matcher: KeyPattern::new(name).ok(),
                    subscribers: BTreeMap::new(),
                })
                .subscribers
                .insert(id, mailbox.clone());
        } else {
            registry.channels.entry(name.clone()).or_default().insert(id, mailbox.clone());
        }
        let listening = registry.clients.entry(id).or_default();
        if pattern {
            listening.patterns.insert(name.clone());
        } else {
            listening.channels.insert(name.clone());
        }
        listening.channels.len() + listening.patterns.len()
    }

    /// Unsubscribes client `id` from `name`; the number of its subscriptions after.
    pub fn unsubscribe(&self, id: u64, name: &Bytes, pattern: bool) -> usize {
        let mut registry = self.registry.write();
        let registry = &mut *registry;
        if pattern {
            if let Some(entry) = registry.patterns.get_mut(name) {
                entry.subscribers.remove(&id);
                if entry.subscribers.is_empty() {
                    registry.patterns.remove(name);
                }
            }
        } else if let Some(subscribers) = registry.channels.get_mut(name) {
            subscribers.remove(&id);
            if subscribers.is_empty() {
                registry.channels.remove(name);
            }
        }
        let Some(listening) = registry.clients.get_mut(&id) else { return 0 };
        if pattern {
            listening.patterns.remove(name);
        } else {
            listening.channels.remove(name);
        }
        let count = listening.channels.len() + listening.patterns.len();
        if count == 0 {
            registry.clients.remove(&id);
        }
        count
    }

    /// The channels (or patterns) client `id` listens to, in order.
    pub fn subscriptions(&self, id: u64, pattern: bool) -> Vec<Bytes> {
        let registry = self.registry.read();
        registry.clients.get(&id).map_or_else(Vec::new, |l| {
            let set = if pattern { &l.patterns } else { &l.channels };
            set.iter().cloned().collect()
        })
    }

    /// Client `id`'s channel and pattern subscriptions.
    pub fn counts(&self, id: u64) -> (usize, usize) {
        let registry = self.registry.read();
        registry.clients.get(&id).map_or((0, 0), |l| (l.channels.len(), l.patterns.len()))
    }

    /// Drops every subscription of client `id` (it left).
    pub fn leave(&self, id: u64) {
        let mut registry = self.registry.write();
        let Some(listening) = registry.clients.remove(&id) else { return };
        for channel in listening.channels {
            if let Some(subscribers) = registry.channels.get_mut(&channel) {
                subscribers.remove(&id);
                if subscribers.is_empty() {
                    registry.channels.remove(&channel);
                }
            }
        }
        for pattern in listening.patterns {
            if let Some(entry) = registry.patterns.get_mut(&pattern) {
                entry.subscribers.remove(&id);
                if entry.subscribers.is_empty() {
                    registry.patterns.remove(&pattern);
                }
            }
        }
    }

    /// Hands `payload` to every subscriber of `channel` and of a pattern
    /// matching it; how many received it (a client subscribed to the
    /// channel and to two matching patterns counts three times, as in Redis).
    pub fn publish(&self, channel: &Bytes, payload: &Bytes) -> usize {
        let registry = self.registry.read();
        let mut receivers = 0;
        if let Some(subscribers) = registry.channels.get(channel) {
            for mailbox in subscribers.values() {
                let message = Message { pattern: None, channel: channel.clone(), payload: payload.clone() };
                receivers += usize::from(mailbox.send(message));
            }
        }
        for (pattern, entry) in &registry.patterns {
            if !entry.matcher.as_ref().is_some_and(|m| m.matches(channel)) {
                continue;
            }
            for mailbox in entry.subscribers.values() {
                let message = Message {
                    pattern: Some(pattern.clone()),
                    channel: channel.clone(),
                    payload: payload.clone(),
                };
                receivers += usize::from(mailbox.send(message));
            }
        }
        receivers
    }

    /// The channels with at least one subscriber that `pattern` matches
    /// (every one without a pattern).
    pub fn channels(&self, pattern: Option<&KeyPattern>) -> Vec<Bytes> {
        let registry = self.registry.read();
        let mut names: Vec<Bytes> =
            registry.channels.keys().filter(|c| pattern.is_none_or(|p| p.matches(c))).cloned().collect();
        names.sort();
        names
    }

    /// The subscribers of `channel` (pattern subscribers not counted, as in Redis).
    pub fn numsub(&self, channel: &Bytes) -> usize {
        self.registry.read().channels.get(channel).map_or(0, BTreeMap::len)
    }

    /// The patterns subscribed to, by any client.
    pub fn numpat(&self) -> usize {
        self.registry.read().patterns.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(text: &str) -> Bytes {
        Bytes::copy_from_slice(text.as_bytes())
    }

    #[test]
    fn messages_reach_channel_and_pattern_subscribers() {
        let pubsub = PubSub::default();
        let (one, mut inbox_one) = mailbox();
        let (two, mut inbox_two) = mailbox();
        assert_eq!(pubsub.subscribe(1, &one, &b("news"), false), 1);
        assert_eq!(pubsub.subscribe(1, &one, &b("n*"), true), 2);
        assert_eq!(pubsub.subscribe(2, &two, &b("h?llo"), true), 1);
        assert_eq!(pubsub.publish(&b("news"), &b("x")), 2, "once per subscription");
        assert_eq!(pubsub.publish(&b("hallo"), &b("y")), 1);
        assert_eq!(pubsub.publish(&b("other"), &b("z")), 0);
        let first = inbox_one.try_recv().unwrap();
        assert_eq!((first.pattern, first.channel), (None, b("news")));
        assert_eq!(inbox_one.try_recv().unwrap().pattern, Some(b("n*")));
        assert!(inbox_one.try_recv().is_none());
        assert_eq!(inbox_two.try_recv().unwrap().payload, b("y"));
        assert_eq!(pubsub.channels(None), vec![b("news")]);
        assert_eq!((pubsub.numsub(&b("news")), pubsub.numpat()), (1, 2));
        assert_eq!(pubsub.unsubscribe(1, &b("news"), false), 1);
        pubsub.leave(1);
        assert_eq!(pubsub.counts(1), (0, 0));
        assert_eq!(pubsub.publish(&b("news"), &b("x")), 0);
        assert_eq!(pubsub.numpat(), 1);
    }

    #[test]
    fn a_subscriber_too_far_behind_is_cut_off() {
        let pubsub = PubSub::default();
        let (mailbox, inbox) = mailbox();
        pubsub.subscribe(1, &mailbox, &b("c"), false);
        let big = Bytes::from(vec![0u8; 1 << 20]);
        let delivered: usize = (0..40).map(|_| pubsub.publish(&b("c"), &big)).sum();
        assert!(delivered < 40, "{delivered}");
        assert!(inbox.overflowed());
    }
}
