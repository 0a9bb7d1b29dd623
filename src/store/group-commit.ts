/**
 * Coalesces concurrent synced batches into one write + fsync. A group is taken at the end of the
 * event loop's turn (setImmediate), so every request made while that turn's I/O callbacks ran goes
 * out in one write. Durability then costs one fsync per wave, not one per session. (Written at once,
 * the first request of a turn went alone: 1.9 fsyncs per turn in the daemon bench, 1.0 with the
 * wait; an fsync costs ~0.15 ms of CPU here. An idle loop runs the immediate at once.)
 *
 * Up to `depth` writes are in flight (2 by default): the group that forms while a write is in flight
 * is handed to LevelDB at once, where it waits behind that write and starts the moment it ends, on
 * LevelDB's thread, without a hop through the main thread. With one write at a time the disk sat idle
 * from each write's end until the main thread, busy with turns, got round to its callback and sent
 * the next group: traced in the daemon bench's 1,000-session burst, the disk was busy 37% of the
 * time, and a gap of 5 ms on average (p90 14 ms) separated a write's end from the next one's start,
 * while every turn waits on ~5 synced writes. More than 2 would only queue more of the pool's 4
 * threads behind LevelDB's one writer (reads and the tools' file I/O use them too). Two writes in
 * flight may reach LevelDB in either order, which is harmless: a record's writer waits for its last
 * write before its next (a turn's checkpoints are chained, a message's inbox row is written before it
 * is routed), and a prompt chunk two turns may both write has the same text either way.
 */
export interface GroupCommitStats {
  /** Requests handed to commit(). */
  requests: number;
  /** Physical writes (each one fsync). */
  writes: number;
  /** Largest number of requests merged into one write. */
  largestGroup: number;
  /** Requests that joined a group already forming (`join`), not counted in `requests`. */
  joined: number;
}

export interface GroupCommit<Op> {
  commit(ops: Op[]): Promise<void>;
  /**
   * Adds ops to the next group while the writer is busy (a write in flight or a group forming) and
   * resolves when that group is written; undefined (nothing done) when it is idle.
   */
  join(ops: Op[]): Promise<void> | undefined;
  /** Resolves once everything handed in so far is written. */
  drain(): Promise<void>;
  readonly stats: GroupCommitStats;
}

interface Pending<Op> {
  ops: Op[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** The group's ops in order, in one array (a loop: flatMap costs a callback and a copy per request). */
function concatOps<Op>(group: Pending<Op>[]): Op[] {
  const ops: Op[] = [];
  for (const p of group) for (const op of p.ops) ops.push(op);
  return ops;
}

export function createGroupCommit<Op>(write: (ops: Op[]) => Promise<void>, opts: { depth?: number } = {}): GroupCommit<Op> {
  const depth = opts.depth ?? 2;
  const stats: GroupCommitStats = { requests: 0, writes: 0, largestGroup: 0, joined: 0 };
  let queue: Pending<Op>[] = [];
  /** Writes handed to `write` and not ended. */
  let writing = 0;
  /** A flush is set for the end of this turn of the event loop. */
  let scheduled = false;
  /** drain()s waiting for the writer to have nothing queued or in flight. */
  let idle: Array<() => void> = [];

  const busy = () => writing > 0 || queue.length > 0;
  const schedule = () => {
    if (scheduled || queue.length === 0 || writing >= depth) return;
    scheduled = true;
    setImmediate(flush);
  };
  function flush() {
    scheduled = false;
    if (queue.length === 0 || writing >= depth) return;
    const group = queue;
    queue = [];
    writing++;
    stats.writes++;
    stats.largestGroup = Math.max(stats.largestGroup, group.length);
    write(group.length === 1 ? group[0]!.ops : concatOps(group)).then(
      () => {
        ended();
        for (const p of group) p.resolve();
      },
      (err: unknown) => {
        ended();
        for (const p of group) p.reject(err);
      },
    );
  }
  /** A write ended: what queued meanwhile goes at the end of this loop turn (with what its callers' continuations add). */
  function ended() {
    writing--;
    schedule();
    if (busy()) return;
    const waiting = idle;
    idle = [];
    for (const resolve of waiting) resolve();
  }
  const enqueue = (ops: Op[]) => {
    const done = new Promise<void>((resolve, reject) => queue.push({ ops, resolve, reject }));
    schedule();
    return done;
  };

  return {
    stats,
    commit(ops) {
      stats.requests++;
      return enqueue(ops);
    },
    join(ops) {
      if (!busy()) return undefined;
      stats.joined++;
      return enqueue(ops);
    },
    drain() {
      return busy() ? new Promise<void>((resolve) => idle.push(resolve)) : Promise.resolve();
    },
  };
}
