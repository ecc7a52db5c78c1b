package firestore

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/stores/docstore"
)

// ownerCreds authenticates to the emulator as its owner, as the client does.
type ownerCreds struct{}

func (ownerCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer owner"}, nil
}
func (ownerCreds) RequireTransportSecurity() bool { return false }

// lossyDocs opens a Docs whose first armed Commit reaches Firestore (and
// applies) but whose answer is lost: the client sees UNAVAILABLE, as on a
// connection that broke after the request was sent.
func lossyDocs(t *testing.T, armed *atomic.Bool, log *[]string) *Docs {
	host := emulatorHost(t)
	conn, err := grpc.NewClient(host,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(ownerCreds{}),
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			err := invoker(ctx, method, req, reply, cc, opts...)
			if strings.HasSuffix(method, "/Commit") {
				*log = append(*log, "Commit -> "+status.Code(err).String())
				if err == nil && armed.CompareAndSwap(true, false) {
					*log = append(*log, "  (answer dropped: UNAVAILABLE)")
					return status.Error(codes.Unavailable, "injected: connection reset after the commit was sent")
				}
			}
			return err
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return openTest(t, DocsConfig{ClientOptions: []option.ClientOption{option.WithGRPCConn(conn)}})
}

// The seam (docstore.ErrOutcomeUnknown): a commit that was sent and got no
// answer may have committed; RunTx returns ErrOutcomeUnknown and fn is not
// run again. Here a read-modify-write increment must never be applied twice.
func TestLostCommitAnswerAppliesOnceAndIsOutcomeUnknown(t *testing.T) {
	var armed atomic.Bool
	var log []string
	d := lossyDocs(t, &armed, &log)
	k := key("c", "counter")
	put(t, d, docstore.Doc{Key: k, Fields: docstore.Fields{"n": int64(0)}})

	armed.Store(true)
	runs := 0
	err := d.RunTx(ctxT(t), func(ctx context.Context, tx docstore.Tx) error {
		runs++
		docs, err := tx.Get(ctx, k)
		if err != nil {
			return err
		}
		return tx.Set(k, docstore.Fields{"n": docs[0].Fields["n"].(int64) + 1})
	})
	got, gerr := d.Get(ctxT(t), k)
	if gerr != nil {
		t.Fatal(gerr)
	}
	n := got[0].Fields["n"].(int64)
	t.Logf("RunTx: %v; fn ran %d times; counter = %d; commits: %q", err, runs, n, log)
	if n != 1 {
		t.Errorf("counter = %d after one increment, want 1 (fn ran %d times)", n, runs)
	}
	if err != nil && !errors.Is(err, docstore.ErrOutcomeUnknown) {
		t.Errorf("RunTx = %v, want nil or an error wrapping docstore.ErrOutcomeUnknown", err)
	}
}

// Same, with a Create: the first commit created the document, its answer
// was lost. RunTx must not say ErrExists ("nothing committed").
func TestLostCommitAnswerOfCreateIsNotErrExists(t *testing.T) {
	var armed atomic.Bool
	var log []string
	d := lossyDocs(t, &armed, &log)
	k := key("c", "created")
	armed.Store(true)
	runs := 0
	err := d.RunTx(ctxT(t), func(ctx context.Context, tx docstore.Tx) error {
		runs++
		return tx.Create(k, docstore.Fields{"v": "mine"})
	})
	got, _ := d.Get(ctxT(t), k)
	t.Logf("RunTx: %v; fn ran %d times; doc present %v; commits: %q", err, runs, got[0] != nil, log)
	if errors.Is(err, docstore.ErrExists) {
		t.Errorf("RunTx = %v: ErrExists says nothing committed, but this transaction's own Create committed", err)
	}
	if err != nil && !errors.Is(err, docstore.ErrOutcomeUnknown) {
		t.Errorf("RunTx = %v, want nil or an error wrapping docstore.ErrOutcomeUnknown", err)
	}
}
