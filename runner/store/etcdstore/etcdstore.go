// Package etcdstore keeps a pool's state in etcd, for a team whose CI
// runners apply from several machines.
//
// Keys, under the pool's prefix P:
//
//	P/state          the state snapshot (compact JSON), written with a
//	                 compare-and-swap on its mod revision
//	P/lock/<lease>   the lock, an etcd concurrency mutex held by a session
//	                 whose lease lapses TTL seconds after its holder's last
//	                 heartbeat
//	P/lockinfo       who holds the lock, attached to the same lease
//	P/journal/<seq>  the records of the last apply, in order
//
// The design is the file store's (see package store): the journal holds
// every finished step with its effect, a snapshot of the state is written
// now and then, announced in the journal in the same transaction, and Read
// replays the effects the snapshot does not hold yet. State and journal
// are read in one transaction, so a reader never mixes two moments.
//
// While a Store holds the lock, every write (state and journal) is a
// transaction conditioned on still owning it, so a runner whose lease
// lapsed (killed, partitioned) can never overwrite its successor's work.
package etcdstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"poolc.dev/poolc/journal"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/store"
)

// DefaultLeaseTTL is the life, in seconds, of a lock's lease without a
// heartbeat when the state block does not set lease_ttl.
const DefaultLeaseTTL = 15

// OpTimeout bounds each etcd request, so that a cluster without quorum
// makes a command fail with a message instead of hanging.
const OpTimeout = 10 * time.Second

// Store is one pool's state in etcd.
type Store struct {
	cli      *clientv3.Client
	prefix   string
	ttl      int
	ownsConn bool

	mu    sync.Mutex
	rev   int64     // mod revision of the state key at the last Read or Write; 0: absent
	owner *heldLock // the lock this Store holds, if any
}

// StaleError is returned by Write when the state changed in etcd since
// this Store read it: the write is refused, never applied.
type StaleError struct {
	Prefix        string
	Read, Current int64 // the mod revisions read and found
}

// Error says what happened and what to do.
func (e *StaleError) Error() string {
	return fmt.Sprintf("state %sstate changed in etcd since it was read (revision %d, now %d): refusing to overwrite it; read it again", e.Prefix, e.Read, e.Current)
}

// ErrLockLost is returned by writes when the lock this Store took is no
// longer held: its lease lapsed or it was force-unlocked.
var ErrLockLost = errors.New("the state lock was lost (its lease lapsed or it was force-unlocked); nothing was written")

// New returns the store of the pool under prefix, on a client the caller
// keeps (Close does not close it). ttl is the lock lease's life in
// seconds; 0 means DefaultLeaseTTL.
func New(cli *clientv3.Client, prefix string, ttl int) *Store {
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return &Store{cli: cli, prefix: prefix, ttl: ttl}
}

func (s *Store) key(name string) string { return s.prefix + name }

// String names the store for messages: "etcd /poolc/lab/".
func (s *Store) String() string { return "etcd " + s.prefix }

// Close closes the client when the Store opened it.
func (s *Store) Close() error {
	if s.ownsConn {
		return s.cli.Close()
	}
	return nil
}

func opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), OpTimeout)
}

// unavailable words an etcd error for a person: one that says etcd could
// not commit (no leader, no answer in time) asks about its majority.
func unavailable(what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: etcd did not answer within %v (is a majority of its members up?): %w", what, OpTimeout, err)
	}
	if NoQuorum(err) {
		return fmt.Errorf("%s: etcd cannot commit (is a majority of its members up?): %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// NoQuorum reports whether err says etcd could not commit a request: no
// leader, a leader lost or stopped during it, or no member reachable.
func NoQuorum(err error) bool {
	for _, e := range []error{rpctypes.ErrNoLeader, rpctypes.ErrLeaderChanged, rpctypes.ErrStopped, rpctypes.ErrTimeout, rpctypes.ErrTimeoutDueToLeaderFail} {
		if errors.Is(err, e) || rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(e) {
			return true
		}
	}
	return status.Code(err) == codes.Unavailable || strings.Contains(err.Error(), "raft: stopped")
}

// snapshot is what one read of etcd holds: the state with the journal's
// effects replayed, the state key's mod revision (0: absent) and the
// journal's records with the sequence number of the last (-1: none).
type snapshot struct {
	state    *pools.State
	rev      int64
	records  journal.Records
	lastSeq  int
	replayed int // how many effects of the journal state holds that the key does not
}

// read reads the state key and the journal in one transaction.
func (s *Store) read() (*snapshot, error) {
	ctx, cancel := opCtx()
	defer cancel()
	resp, err := s.cli.Txn(ctx).Then(
		clientv3.OpGet(s.key("state")),
		s.journalKeys().Get(),
	).Commit()
	if err != nil {
		return nil, unavailable("reading the state from etcd", err)
	}
	snap := &snapshot{}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		if snap.state, err = pools.ParseState(s.key("state"), kvs[0].Value); err != nil {
			return nil, err
		}
		snap.rev = kvs[0].ModRevision
	} else {
		snap.state = &pools.State{FormatVersion: pools.StateFormatVersion}
		snap.state.Normalize()
	}
	if snap.records, snap.lastSeq, err = s.journalKeys().Parse(resp.Responses[1].GetResponseRange().Kvs); err != nil {
		return nil, err
	}
	if snap.replayed, err = snap.records.Replay(snap.state, s.key("journal/")); err != nil {
		return nil, err
	}
	return snap, nil
}

// Read returns the state with the effects of the steps the last apply
// journaled as finished after its last snapshot, or an empty state when
// there is none, and remembers the state key's revision for the next
// Write.
func (s *Store) Read() (*pools.State, error) {
	snap, err := s.read()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.rev = snap.rev
	s.mu.Unlock()
	return snap.state, nil
}

// LastApply reads the journal and reports the last apply if it was
// interrupted, or nil.
func (s *Store) LastApply() (*journal.Interrupted, error) {
	snap, err := s.read()
	if err != nil {
		return nil, err
	}
	return snap.records.Interrupted(), nil
}

// Write stores st if the state key is still at the revision this Store
// last read or wrote (and, while it holds the lock, if the lock is still
// its own). It gives st a lineage if it has none and increments its
// serial; on failure st is left as it was.
func (s *Store) Write(st *pools.State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeState(st, "writing the state to etcd", nil)
}

// writeState gives st a lineage if it has none, increments its serial
// and puts it, with the ops with returns (called once st has its new
// serial), if the state key is at the revision this Store last read or
// wrote and, while it holds the lock, if it still owns it. On failure st
// is left as it was. The caller holds s.mu.
func (s *Store) writeState(st *pools.State, what string, with func() ([]clientv3.Op, error)) error {
	lineage := st.Lineage
	if st.Lineage == "" {
		st.Lineage = store.NewID()
	}
	st.Serial++
	err := func() error {
		data, err := st.MarshalCompact()
		if err != nil {
			return err
		}
		ops := []clientv3.Op{clientv3.OpPut(s.key("state"), string(data))}
		if with != nil {
			more, err := with()
			if err != nil {
				return err
			}
			ops = append(ops, more...)
		}
		resp, err := s.txn([]clientv3.Cmp{s.stateAt(s.rev)}, ops...)
		if err != nil {
			return unavailable(what, err)
		}
		if !resp.Succeeded {
			return s.refused()
		}
		s.rev = resp.Header.Revision
		return nil
	}()
	if err != nil {
		st.Lineage, st.Serial = lineage, st.Serial-1
	}
	return err
}

// stateAt is the comparison that the state key is at mod revision rev.
func (s *Store) stateAt(rev int64) clientv3.Cmp {
	return clientv3.Compare(clientv3.ModRevision(s.key("state")), "=", rev)
}

// refused says why a conditional write failed: the lock was lost, or
// the state changed since it was read. The caller holds s.mu.
func (s *Store) refused() error {
	if s.owner != nil && !s.ownerStillHolds() {
		return ErrLockLost
	}
	return &StaleError{Prefix: s.prefix, Read: s.rev, Current: s.currentRevision()}
}

// currentRevision is the state key's mod revision in etcd now, 0 when it
// is absent or etcd does not answer.
func (s *Store) currentRevision() int64 {
	ctx, cancel := opCtx()
	defer cancel()
	if g, err := s.cli.Get(ctx, s.key("state")); err == nil && len(g.Kvs) > 0 {
		return g.Kvs[0].ModRevision
	}
	return 0
}

// txn runs ops if cmps hold and, while this Store holds the lock, if it
// still owns it. The caller holds s.mu.
func (s *Store) txn(cmps []clientv3.Cmp, ops ...clientv3.Op) (*clientv3.TxnResponse, error) {
	if s.owner != nil {
		cmps = append(cmps, s.owner.mutex.IsOwner())
	}
	ctx, cancel := opCtx()
	defer cancel()
	return s.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
}

// ownerStillHolds reports whether the lock key of this Store's lock is
// still there. The caller holds s.mu.
func (s *Store) ownerStillHolds() bool {
	ctx, cancel := opCtx()
	defer cancel()
	resp, err := s.cli.Get(ctx, s.owner.mutex.Key())
	return err == nil && len(resp.Kvs) > 0
}

// heldLock is the lock a Store holds: a session (lease) and the mutex.
type heldLock struct {
	s       *Store
	session *concurrency.Session
	mutex   *concurrency.Mutex
	info    store.LockInfo
	untrack func()
	once    sync.Once
}

var (
	_ store.Backend  = (*Store)(nil)
	_ store.Unlocker = (*heldLock)(nil)
)

// Acquire takes the state lock: a session whose lease lives TTL seconds
// past its last heartbeat, and the mutex under P/lock/. It waits until ctx
// is done, then fails with a *store.LockedError naming the holder. stale
// is never called: a dead holder's lease lapses by itself. What a killed
// holder journaled is settled by BeginJournal, in the transaction that
// starts the new journal.
func (s *Store) Acquire(ctx context.Context, info store.LockInfo, stale func(store.LockInfo)) (store.Unlocker, error) {
	gctx, cancel := opCtx()
	lease, err := s.cli.Grant(gctx, int64(s.ttl))
	cancel()
	if err != nil {
		return nil, unavailable("taking the state lock", err)
	}
	session, err := concurrency.NewSession(s.cli, concurrency.WithLease(lease.ID), concurrency.WithTTL(s.ttl))
	if err != nil {
		return nil, unavailable("taking the state lock", err)
	}
	m := concurrency.NewMutex(session, s.key("lock/"))
	tctx, cancel := opCtx()
	err = m.TryLock(tctx)
	cancel()
	if errors.Is(err, concurrency.ErrLocked) {
		if _, waits := ctx.Deadline(); waits && ctx.Err() == nil {
			err = m.Lock(ctx)
		}
	}
	if err != nil {
		session.Close()
		if errors.Is(err, concurrency.ErrLocked) || ctx.Err() != nil {
			held, ierr := s.LockInfo()
			if ierr != nil {
				held = store.LockInfo{ID: "unknown", Who: "a holder that has not written its lock info yet"}
			}
			return nil, &store.LockedError{Path: s.String(), Info: held}
		}
		return nil, unavailable("taking the state lock", err)
	}
	data, err := json.Marshal(info)
	if err != nil {
		session.Close()
		return nil, err
	}
	pctx, cancel := opCtx()
	resp, err := s.cli.Txn(pctx).If(m.IsOwner()).Then(clientv3.OpPut(s.key("lockinfo"), string(data), clientv3.WithLease(lease.ID))).Commit()
	cancel()
	if err != nil || !resp.Succeeded {
		session.Close()
		if err == nil {
			err = ErrLockLost
		}
		return nil, unavailable("writing the lock info", err)
	}
	h := &heldLock{s: s, session: session, mutex: m, info: info}
	h.untrack = store.Track(h)
	s.mu.Lock()
	s.owner = h
	s.mu.Unlock()
	if err := s.settle(); err != nil {
		h.Unlock()
		return nil, err
	}
	return h, nil
}

// settle writes the steps a killed holder's journal says finished after
// its last snapshot into the state, announced in its journal in the same
// transaction, so that the next apply's journal can replace it. The
// caller holds the lock.
func (s *Store) settle() error {
	snap, err := s.read()
	if err != nil || snap.replayed == 0 {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rev = snap.rev
	st, apply := snap.state, snap.records[len(snap.records)-1].Apply
	return s.writeState(st, "settling the last apply's journal in etcd", func() ([]clientv3.Op, error) {
		op, err := s.journalKeys().Put(snap.lastSeq+1, apply, journal.Record{Event: journal.Snapshot, Lineage: st.Lineage, Serial: st.Serial, Finished: snap.records.Finished()})
		return []clientv3.Op{op}, err
	})
}

// Unlock releases the lock and revokes its lease, if it is still held.
// Unlocking twice does nothing.
func (h *heldLock) Unlock() error {
	var err error
	h.once.Do(func() {
		h.untrack()
		h.s.mu.Lock()
		if h.s.owner == h {
			h.s.owner = nil
		}
		h.s.mu.Unlock()
		ctx, cancel := opCtx()
		defer cancel()
		_, err = h.s.cli.Txn(ctx).If(h.mutex.IsOwner()).Then(clientv3.OpDelete(h.s.key("lockinfo")), clientv3.OpDelete(h.mutex.Key())).Commit()
		err = errors.Join(err, h.session.Close())
	})
	return err
}

// LockInfo says who holds the lock; the error matches fs.ErrNotExist
// when nobody does.
func (s *Store) LockInfo() (store.LockInfo, error) {
	info, _, err := s.lockInfo()
	return info, err
}

func (s *Store) lockInfo() (store.LockInfo, clientv3.LeaseID, error) {
	var info store.LockInfo
	ctx, cancel := opCtx()
	defer cancel()
	resp, err := s.cli.Get(ctx, s.key("lockinfo"))
	if err != nil {
		return info, 0, unavailable("reading the lock info", err)
	}
	if len(resp.Kvs) == 0 {
		return info, 0, fmt.Errorf("state %s is not locked: %w", s, fs.ErrNotExist)
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &info); err != nil {
		return info, 0, fmt.Errorf("%s: %w", s.key("lockinfo"), err)
	}
	return info, clientv3.LeaseID(resp.Kvs[0].Lease), nil
}

// ForceUnlock breaks the lock whose ID is id by revoking its lease: the
// holder's session ends and its further writes are refused.
func (s *Store) ForceUnlock(id string) error {
	held, lease, err := s.lockInfo()
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("state %s is not locked", s)
	}
	if err != nil {
		return err
	}
	if held.ID != id {
		return fmt.Errorf("lock ID %s does not match the lock held: %s", id, held)
	}
	ctx, cancel := opCtx()
	defer cancel()
	if _, err := s.cli.Revoke(ctx, lease); err != nil {
		return unavailable("revoking the lock's lease", err)
	}
	return nil
}
