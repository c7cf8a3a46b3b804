/* A model of ccltune's consistency protocol (DESIGN.md §4) for the SPIN model checker; what it
 * models, what it abstracts and what was measured: docs/spin-model.md. Run: tests/spin/check.sh.
 *
 * NR ranks share one communicator that ccltune tunes. Each rank is three processes: its host (the
 * training loop with ccltune's interposer and coordinator), its collective stream (the GPU stream
 * that runs the communicator's collectives and ccltune's sync ops) and its p2p stream (pipeline
 * send/recv, never counted by ccltune). A host enqueues work asynchronously; a stream runs its
 * entries in order; a collective is a rendezvous that blocks until every rank's stream reached its
 * n-th collective, and there the op and the config of every rank are compared (property 1).
 *
 * The user program of rank r (pipeline stage r of NR, forward only), ITERS iterations of:
 *   r > 0:      recv from r-1 on the p2p stream; the collective stream waits for it (an event)
 *   UPI units:  A (an ungrouped all-reduce), G (a user group of two collectives), A again if UPI = 3
 *   bug c only: a call of this rank's size on another communicator (its pipeline stage's)
 *   r < NR-1:   send to r+1 on the p2p stream
 *   host sync:  the host waits until both its streams are idle (a loss.item() per iteration)
 *
 * -D switches: NO_CCLTUNE (the user program alone), PLANTED_LATE (bug a: rank 1 applies every
 * update one call late), PLANTED_SKIP (bug b: rank 1 never issues sync SKIP_ID), PLANTED_SIZE_KEY
 * (bug c: schedules keyed by call size instead of workload), SHORT_INTERVAL (sync intervals of one
 * unit, shorter than an iteration: the premise of the no-new-deadlock argument broken), HALF_INTERVAL
 * (intervals of half an iteration, each the complement of the one before, as while a search runs: two in a
 * row, the span from a sync op to the host wait for it, still cover an iteration);
 * REACH_TUNED and REACH_STOP assert that no tuned config runs and that tuning never stops, so that
 * their counterexamples show the checked model does reach both.
 */

#ifndef NR
#define NR 3
#endif
#ifndef ITERS
#define ITERS 4
#endif
#ifndef UPI
#define UPI 2 /* units per iteration */
#endif
#ifndef SKIP_ID
#define SKIP_ID 1
#endif

#define LAG 2   /* coordinator::kLag: payload k is applied at sync point k + LAG */
#define FIRST 1 /* coordinator::kFirstSyncUnit: the first sync follows unit 1, the agreement point */
#ifdef SHORT_INTERVAL
#define IVL 1
#elif defined(HALF_INTERVAL)
#define IVL (UPI / 2) /* IntervalPolicy's floor while searching: half an iteration (the shorter half) */
#else
#define IVL UPI /* IntervalPolicy's floor: one iteration; kInitialInterval stands for the same */
#endif
#ifdef HALF_INTERVAL
/* the interval after sync point j: halves, each the complement of the one before (an odd UPI alternates), so
   that LAG of them in a row span one iteration; the shortest span from a sync op to its apply */
#define IVLJ(j) (((j) % 2 == 0) -> IVL : UPI - IVL)
#define SPAN UPI
#else
#define IVLJ(j) IVL
#define SPAN (LAG * IVL)
#endif
#define TOTAL (ITERS * UPI)
#define VM 3 /* stands for 2^63: a rank writes its version v and VM - v */

#define RX 4 /* reduced payloads a rank keeps: NcclTransport::kSlots = kLag + 2 */
#define QC 8
#define QP 2

/* collective-stream entries (kind): a user collective, a sync op, a wait for the p2p stream */
#define E_COLL 1
#define E_SYNC 2
#define E_WAITP 3
/* p2p-stream entries */
#define E_SEND 1
#define E_RECV 2

/* workloads (schedule slots) and the collectives a stream record names (arg of E_COLL) */
#define W_A 0
#define W_G 1
#define C_A 1
#define C_G1 2
#define C_G2 3

/* call sizes, for bug c: rank 0's call on its stage communicator has the size of A */
#define S_A 1
#define S_G 2
#define S_T 3
#define TPSIZE(r) ((r) == 0 -> S_A : S_T)

/* the leader's message in one byte: update (workload + 1, candidate, final) and a longer next
   interval; the other ranks write 0, so the MAX delivers it unchanged */
#define PAY(w, c, f) (((w) + 1) | ((c) << 2) | ((f) << 4))
#define PAY_LONG 64

chan cq[NR] = [QC] of { byte, byte, byte, byte, byte, byte, byte }; /* kind arg cfg pay cant ver verc */
chan pq[NR] = [QP] of { byte, byte };                               /* kind peer */

/* collective rendezvous: arrivals per rank, collectives completed, each rank's record of the
   collective it waits in (what it runs, the words it contributes) */
byte nc[NR];
byte ndone;
byte rkind[NR];
byte rarg[NR];
byte rcfg[NR];
byte rpay[NR];
byte rcant[NR];
byte rver[NR];
byte rverc[NR];
/* per rank: syncs its stream completed (sync k done iff sdone > k), the reduced words it holds */
byte sdone[NR];
byte xpay[NR * RX];
byte xcant[NR * RX];
byte xvmax[NR * RX];
byte xvminc[NR * RX];
/* p2p: entries done; sends of r to r+1 and receives of r from r-1 that arrived */
byte pdone[NR];
byte snd[NR];
byte rcv[NR];
bool hostdone[NR];
/* the agreement point: 0 all ranks fine, 1 the last rank cannot tune, 2 it runs protocol version 2 */
byte lastcond;

/* The stream that arrives last completes the collective for every rank: property 1 over every
   rank's record, and for a sync op the MAX of every word delivered to every rank. */
inline complete() {
  i = 0;
  do
  :: i < NR ->
     if
     :: rkind[i] != kind || rarg[i] != arg || rcfg[i] != cfg ->
        printf("MSC: MISMATCH in collective #%d: rank %d runs kind %d arg %d config %d, rank %d kind %d arg %d config %d\n",
               m - 1, i, rkind[i], rarg[i], rcfg[i], r, kind, arg, cfg)
     :: else
     fi;
     /* property 1: every rank runs this collective as the same op with the same config */
     assert(rkind[i] == kind && rarg[i] == arg && rcfg[i] == cfg);
     if
     :: rpay[i] > mp -> mp = rpay[i]
     :: else
     fi;
     if
     :: rcant[i] > mc -> mc = rcant[i]
     :: else
     fi;
     if
     :: rver[i] > mv -> mv = rver[i]
     :: else
     fi;
     if
     :: rverc[i] > mvc -> mvc = rverc[i]
     :: else
     fi;
     rkind[i] = 0; rarg[i] = 0; rcfg[i] = 0; rpay[i] = 0; rcant[i] = 0; rver[i] = 0; rverc[i] = 0;
     i++
  :: else -> break
  od;
  if
  :: kind == E_SYNC ->
     printf("MSC: collective #%d done (rank %d arrived last): sync %d, payload %d\n", m - 1, r, arg, mp);
     i = 0;
     do
     :: i < NR ->
        x = i * RX + arg % RX;
        xpay[x] = mp; xcant[x] = mc; xvmax[x] = mv; xvminc[x] = mvc;
        sdone[i] = arg + 1;
        i++
     :: else -> break
     od
  :: else -> printf("MSC: collective #%d done (rank %d arrived last): collective %d, config %d\n", m - 1, r, arg, cfg)
  fi;
#ifdef REACH_TUNED
  assert(cfg == 0); /* reachability check: must fail, some collective runs a tuned config */
#endif
  ndone = m;
  i = 0; x = 0; mp = 0; mc = 0; mv = 0; mvc = 0
}

#define ALL_ARRIVED(m) (nc[0] >= (m) && nc[1] >= (m) && (NR < 3 || nc[(NR > 2 -> 2 : 0)] >= (m)) && \
                        (NR < 4 || nc[(NR > 3 -> 3 : 0)] >= (m)))

proctype Stream(byte r) {
  byte kind, arg, cfg, pay, cant, ver, verc, m, i, x, mp, mc, mv, mvc;
  do
  :: d_step {
       nempty(cq[r]) -> cq[r]?<kind, arg, cfg, pay, cant, ver, verc>;
       if
       :: kind != E_WAITP ->
          rkind[r] = kind; rarg[r] = arg; rcfg[r] = cfg;
          rpay[r] = pay; rcant[r] = cant; rver[r] = ver; rverc[r] = verc;
          nc[r]++;
          m = nc[r];
          if
          :: ALL_ARRIVED(m) -> complete()
          :: else -> printf("MSC: rank %d stream waits in collective #%d (kind %d arg %d)\n", r, m - 1, kind, arg)
          fi
       :: else -> printf("MSC: rank %d stream waits for its p2p stream\n", r)
       fi
     }
     d_step {
       (kind == E_WAITP && pdone[r] >= arg) || (kind != E_WAITP && ndone >= m) ->
       cq[r]?kind, arg, cfg, pay, cant, ver, verc;
       kind = 0; arg = 0; cfg = 0; pay = 0; cant = 0; ver = 0; verc = 0; m = 0
     }
  :: d_step { empty(cq[r]) && hostdone[r] -> skip }; break
  od
}

proctype P2p(byte r) {
  byte kind, peer;
  do
  :: d_step {
       nempty(pq[r]) -> pq[r]?<kind, peer>;
       if
       :: kind == E_SEND -> snd[r]++; printf("MSC: rank %d p2p: send to rank %d\n", r, peer)
       :: else -> rcv[r]++; printf("MSC: rank %d p2p: recv from rank %d\n", r, peer)
       fi
     }
     d_step {
       (kind == E_SEND && rcv[peer] >= snd[r]) || (kind == E_RECV && snd[peer] >= rcv[r]) ->
       pq[r]?kind, peer;
       pdone[r]++;
       kind = 0; peer = 0
     }
  :: d_step { empty(pq[r]) && hostdone[r] -> skip }; break
  od
}

/* ---- the host: the user's loop, with ccltune's interposer and coordinator around each unit ---- */

/* ScheduleBook::Next: the config of the next call of workload w, consuming one call; 0 is NCCL's
   default (no schedule, or tuning stopped) */
inline book_next(w, out) {
  if
  :: !tuning -> out = 0
  :: tuning && p1n[w] > 0 ->
     out = p1c[w];
     p1n[w]--;
     if
     :: p1n[w] == 0 -> p1c[w] = p2c[w]; p1n[w] = p2n[w]; p2c[w] = 0; p2n[w] = 0
     :: else
     fi
  :: tuning && p1n[w] == 0 -> out = fin[w]
  fi
}

/* the schedule slot of a call of size sz when schedules are keyed by size (bug c); 255: none */
#define SLOT_OF_SIZE(sz) ((sz) == S_A -> W_A : ((sz) == S_G -> W_G : 255))

/* CommCoordinator::Apply(k), after the lagged host wait: stop on every rank on a flag or a version
   difference, else replace the workload's schedule and take the interval I_{k+LAG} */
inline apply(k) {
  printf("MSC: rank %d waits for sync %d\n", r, k);
  sdone[r] > (k); /* the host wait on sync k's event */
  d_step {
    x = r * RX + (k) % RX;
    if
    :: xcant[x] > 0 || xvmax[x] != VM - xvminc[x] ->
       printf("MSC: rank %d applies sync %d: tuning stops (flag %d, versions %d..%d)\n", r, k, xcant[x],
              VM - xvminc[x], xvmax[x]);
#ifdef REACH_STOP
       assert(false); /* reachability check: must fail, the agreement point stops tuning */
#endif
       tuning = 0; syncing = 0;
       p1c[0] = 0; p1n[0] = 0; p2c[0] = 0; p2n[0] = 0; fin[0] = 0;
       p1c[1] = 0; p1n[1] = 0; p2c[1] = 0; p2n[1] = 0; fin[1] = 0
    :: else ->
       if
       :: (xpay[x] & 3) > 0 ->
          w = (xpay[x] & 3) - 1;
          printf("MSC: rank %d applies sync %d: workload %d runs config %d once, then %d\n", r, k, w,
                 (xpay[x] >> 2) & 3, (xpay[x] >> 4) & 3);
#ifdef PLANTED_LATE
          if
          :: r == 1 -> /* bug a: the old config is served once more before the new schedule */
             p2c[w] = (xpay[x] >> 2) & 3; p2n[w] = 1; p1c[w] = fin[w]; p1n[w] = 1
          :: else -> p1c[w] = (xpay[x] >> 2) & 3; p1n[w] = 1; p2c[w] = 0; p2n[w] = 0
          fi;
#else
          p1c[w] = (xpay[x] >> 2) & 3; p1n[w] = 1; p2c[w] = 0; p2n[w] = 0;
#endif
          fin[w] = (xpay[x] >> 4) & 3;
          w = 0
       :: else -> printf("MSC: rank %d applies sync %d: no update\n", r, k)
       fi;
       ivl = ((xpay[x] & PAY_LONG) > 0 -> 2 * IVLJ(j) : IVLJ(j))
    fi;
    xpay[x] = 0; xcant[x] = 0; xvmax[x] = 0; xvminc[x] = 0; x = 0
  }
}

/* The leader writes its message, every other rank zeros. Payload j is applied LAG sync points
   later, at least SPAN units on; past the end of the program nobody reads it, and the leader
   leaves it empty (this only prunes branches that cannot differ). */
inline issue(j) {
  if
  :: r == 0 && nextu + SPAN <= TOTAL ->
     if
     :: pay = 0
#ifndef SHORT_INTERVAL
     :: pay = PAY_LONG
#endif
     :: pay = PAY(W_A, 1, 1)
     :: pay = PAY(W_A, 1, 2)
     :: pay = PAY(W_A, 2, 1)
     :: pay = PAY(W_A, 2, 2)
     :: pay = PAY(W_G, 1, 1)
     :: pay = PAY(W_G, 1, 2)
     :: pay = PAY(W_G, 2, 1)
     :: pay = PAY(W_G, 2, 2)
     fi
  :: else -> pay = 0
  fi;
  printf("MSC: rank %d issues sync %d after unit %d\n", r, j, units);
  cq[r]!E_SYNC, (j), 0, pay, mycant, myver, VM - myver;
  pay = 0
}

/* CommCoordinator::OnUnitComplete with SyncCadence: at a sync point, first apply the payload LAG
   syncs back (waiting for it), then issue this sync on the unit's stream */
inline after_unit() {
  units++;
  if
  :: syncing && units == nextu ->
     j = nextid;
     nextid++;
     ivl = IVLJ(j);
     if
     :: j >= LAG -> k = j - LAG; apply(k); k = 0
     :: else
     fi;
     if
     :: syncing ->
#ifdef PLANTED_SKIP
        if
        :: r == 1 && j == SKIP_ID -> printf("MSC: rank %d skips sync %d\n", r, j) /* bug b */
        :: else -> issue(j)
        fi;
#else
        issue(j);
#endif
        nextu = nextu + ivl
     :: else
     fi;
     j = 0; ivl = 0
  :: else
  fi
}

#ifdef NO_CCLTUNE
#define UNIT(w, first, second)                  \
  cq[r]!E_COLL, first, 0, 0, 0, 0, 0;           \
  if                                            \
  :: second != 0 -> cq[r]!E_COLL, second, 0, 0, 0, 0, 0 \
  :: else                                       \
  fi
#else
/* one unit: one decision, looked up when the unit is issued, for every collective of it */
#define UNIT(w, first, second)                                                       \
  book_next(w, cfg);                                                               \
  printf("MSC: rank %d unit %d: workload %d with config %d\n", r, units + 1, w, cfg); \
  cq[r]!E_COLL, first, cfg, 0, 0, 0, 0;                                            \
  if                                                                               \
  :: second != 0 -> cq[r]!E_COLL, second, cfg, 0, 0, 0, 0                          \
  :: else                                                                          \
  fi;                                                                              \
  after_unit();                                                                    \
  cfg = 0
#endif

proctype Host(byte r) {
  byte it, u, cfg, pissued, units, j, k, w, x, ivl, pay;
  byte nextu = FIRST;
  byte nextid = 0;
  bool tuning = 1;
  bool syncing = 1;
  byte p1c[2], p1n[2], p2c[2], p2n[2], fin[2];
  byte mycant = 0;
  byte myver = 1;
  if
  :: r == NR - 1 && lastcond == 1 -> mycant = 1
  :: r == NR - 1 && lastcond == 2 -> myver = 2
  :: else
  fi;
  do
  :: it < ITERS ->
     /* Host steps between two blocking points are one atomic step: they only touch the host's own
        state and append to its own streams, so no other process can tell them apart. */
     atomic {
       if
       :: r > 0 ->
          pq[r]!E_RECV, r - 1;
          pissued++;
          cq[r]!E_WAITP, pissued, 0, 0, 0, 0, 0
       :: else
       fi;
       u = 0;
       do
       :: u < UPI && u % 2 == 0 -> UNIT(W_A, C_A, 0); u++
       :: u < UPI && u % 2 == 1 -> UNIT(W_G, C_G1, C_G2); u++
       :: else -> break
       od;
#ifdef PLANTED_SIZE_KEY
       /* bug c: a call on this rank's stage communicator consumes the schedule of its size */
       if
       :: SLOT_OF_SIZE(TPSIZE(r)) != 255 ->
          book_next(SLOT_OF_SIZE(TPSIZE(r)), cfg);
          printf("MSC: rank %d: a call of size %d on another communicator took config %d\n", r, TPSIZE(r), cfg);
          cfg = 0
       :: else
       fi;
#endif
       if
       :: r < NR - 1 -> pq[r]!E_SEND, r + 1; pissued++
       :: else
       fi;
       u = 0
     }
     empty(cq[r]) && empty(pq[r]); /* the user's host sync */
     printf("MSC: rank %d host sync after iteration %d\n", r, it);
     it++
  :: else -> break
  od;
  hostdone[r] = 1
}

init {
  byte i;
  atomic {
#ifndef NO_CCLTUNE
    if
    :: lastcond = 0
    :: lastcond = 1
    :: lastcond = 2
    fi;
#endif
    do
    :: i < NR -> run Host(i); run Stream(i); run P2p(i); i++
    :: else -> break
    od
  }
}
