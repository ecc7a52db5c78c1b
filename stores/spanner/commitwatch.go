package spanner

import (
	"context"
	"errors"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The client runs a transaction's function again when its Commit fails
// with Aborted, which commits nothing, but also with some Internal errors
// (a stream reset: "RST_STREAM"), whose Commit may have been applied: it
// reached Spanner and only its answer was lost. Run again, the function
// would act a second time on the state its first run committed, and be
// reported as one success. A commit watch, in the context of RunTx's call,
// hears every Commit answer of the transaction (commitWatcher, an
// interceptor on the client's connection); an attempt that starts after
// one whose answer says nothing of the outcome stops with
// errCommitAmbiguous instead, which RunTx reports as
// docstore.ErrOutcomeUnknown.

const commitRPC = "/google.spanner.v1.Spanner/Commit"

// commitWatch records that a Commit's answer left its outcome unknown.
type commitWatch struct{ ambiguous atomic.Bool }

type commitWatchKey struct{}

var errCommitAmbiguous = errors.New("spanner: a commit's outcome is unknown; not running the transaction again")

// outcomeUnknown says whether a failed Commit with this code may have
// been applied: Aborted and the refusals commit nothing.
func outcomeUnknown(c codes.Code) bool {
	switch c {
	case codes.Internal, codes.Unknown, codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.DataLoss:
		return true
	}
	return false
}

// commitWatcher is the interceptor that tells a transaction's commit watch
// of its Commit answers. It must be the outermost, so that it hears what
// the client hears.
func commitWatcher(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	if err != nil && method == commitRPC {
		if w, ok := ctx.Value(commitWatchKey{}).(*commitWatch); ok && outcomeUnknown(status.Code(err)) {
			w.ambiguous.Store(true)
		}
	}
	return err
}
