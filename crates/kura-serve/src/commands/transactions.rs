//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH (the block and its
//! run are in `crate::multi`).

use bytes::Bytes;

use super::Ctx;
use crate::multi;
use crate::reply::Reply;

pub fn multi(ctx: &mut Ctx, _: &[Bytes]) -> Reply {
    multi::multi(ctx.session)
}

pub fn exec(ctx: &mut Ctx, _: &[Bytes]) -> Reply {
    multi::exec(ctx)
}

pub fn discard(ctx: &mut Ctx, _: &[Bytes]) -> Reply {
    multi::discard(ctx.session)
}

pub fn watch(ctx: &mut Ctx, args: &[Bytes]) -> Reply {
    multi::watch(ctx.server, ctx.session, &args[1..])
}

pub fn unwatch(ctx: &mut Ctx, _: &[Bytes]) -> Reply {
    multi::unwatch(ctx.session)
}
