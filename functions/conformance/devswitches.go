package conformance

import (
	"testing"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/stores/wake"
)

// testDevSwitches: the local-development switch that sluice serve
// --dev-no-cooldowns sets. The service passes zero windows, and every store
// must take a zero RecreateCooldown and MinInterval as no window at all,
// even at the same instant as the delete or purge (design: off by default,
// AWS's 60 s rules otherwise, as the Queues and Purge areas check).
func testDevSwitches(t *testing.T, s suite) {
	s.test(t, "NoCooldowns", func(e *env) {
		hub := wake.NewHub(wake.HubOptions{})
		e.t.Cleanup(func() { _ = hub.Close() })
		svc := service.New(service.Config{
			Store: e.store, Region: Region, AccountID: AccountID, BaseURL: BaseURL,
			Clock: e.clock.Now, Wakeups: hub, RepairInterval: repairInterval,
			NoCooldowns: true,
		})
		e.t.Cleanup(svc.Shutdown)
		e.svc = svc // the helpers below use it

		url := e.create("again", map[string]string{"VisibilityTimeout": "45"})
		e.send(url, "old")
		_, err := svc.PurgeQueue(e.op(), &contract.PurgeQueueInput{QueueUrl: url})
		wantOK(e.t, err, "PurgeQueue")
		e.send(url, "kept")
		_, err = svc.PurgeQueue(e.op(), &contract.PurgeQueueInput{QueueUrl: url})
		wantOK(e.t, err, "a second PurgeQueue at once")
		e.wantCounts(url, 0, 0, 0) // it purged
		e.send(url, "doomed")
		_, err = svc.DeleteQueue(e.op(), &contract.DeleteQueueInput{QueueUrl: url})
		wantOK(e.t, err, "DeleteQueue")
		e.create("again", nil)
		// A new incarnation, as after the cooldown.
		if got := e.attrs(url, "VisibilityTimeout")["VisibilityTimeout"]; got != "30" {
			e.t.Errorf("recreated queue VisibilityTimeout = %q, want the default 30", got)
		}
		e.wantCounts(url, 0, 0, 0)
	})
}
