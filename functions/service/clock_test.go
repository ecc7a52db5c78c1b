package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/functions/service"
	"github.com/sluicehq/sluice/stores"
	"github.com/sluicehq/sluice/stores/memstore"
)

// clockless is a real store that declares no clock of its own, and records
// the Now of every send.
type clockless struct {
	stores.Store
	own  bool
	nows []time.Time
}

func (c *clockless) Traits() stores.Traits {
	t := c.Store.Traits()
	t.OwnClock = c.own
	return t
}

func (c *clockless) MessageSend(ctx context.Context, p *stores.MessageSendParams) (*stores.MessageSendResult, error) {
	c.nows = append(c.nows, p.Now)
	return c.Store.MessageSend(ctx, p)
}

// A store without a clock of its own always gets the time from the service;
// one with a clock gets zero (use yours) unless the service has a clock.
func TestServiceSuppliesTheTimeToStoresWithoutAClock(t *testing.T) {
	for _, own := range []bool{false, true} {
		st := &clockless{Store: memstore.New(), own: own}
		svc := service.New(service.Config{Store: st, BaseURL: "http://h"})
		url := create(t, svc, "q")
		before := time.Now()
		body := "m"
		if _, err := svc.SendMessage(context.Background(), &contract.SendMessageInput{QueueUrl: url, MessageBody: &body}); err != nil {
			t.Fatal(err)
		}
		got := st.nows[len(st.nows)-1]
		switch {
		case own && !got.IsZero():
			t.Errorf("a store with its own clock was given Now %v, want zero", got)
		case !own && (got.Before(before) || got.After(time.Now())):
			t.Errorf("a store without a clock was given Now %v, want the wall clock", got)
		}
		svc.Shutdown()
		_ = st.Close()
	}
}
