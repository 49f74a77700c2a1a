package demo_test

import (
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/gatehouse-dev/gatehouse/demo"
)

func readText(t *testing.T, c *client.Client, uri string) string {
	t.Helper()
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	res, err := c.ReadResource(ctxT(t), req)
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	return res.Contents[0].(mcp.TextResourceContents).Text
}

func TestUpdateWatchedResource(t *testing.T) {
	for _, p := range peers {
		if mcp.IsModernProtocol(p.version) {
			continue // 2026-07-28 has no sessions to notify; subscriptions/listen replaces them
		}
		t.Run(p.name, func(t *testing.T) {
			srv := demo.NewMCP(demo.MCPOptions{})
			c := connect(t, srv, p, &fakeUser{})
			var notes notifications
			notes.record(c)
			sub := mcp.SubscribeRequest{}
			sub.Params.URI = "test://watched-resource"
			if err := c.Subscribe(ctxT(t), sub); err != nil { //nolint:staticcheck // resources/subscribe, which the suite tests (before 2026-07-28)
				t.Fatal(err)
			}

			// Over HTTP a notification travels on the client's listening stream (GET), which
			// the client opens on its own after initialize; one sent before it is open is lost
			// (the transport keeps none). So the update is repeated until one arrives.
			updated := func() int { return len(notes.params(t, "notifications/resources/updated")) }
			waitFor(t, "notifications/resources/updated", func() bool {
				if err := srv.UpdateWatchedResource("changed once"); err != nil {
					t.Fatalf("update: %v", err)
				}
				for range 20 {
					if updated() > 0 {
						return true
					}
					time.Sleep(10 * time.Millisecond)
				}
				return false
			})
			time.Sleep(50 * time.Millisecond) // a second update's notification, if one was on its way
			seen := updated()
			if got := notes.params(t, "notifications/resources/updated")[0]["uri"]; got != "test://watched-resource" {
				t.Errorf("updated %v, want test://watched-resource", got)
			}
			if got := readText(t, c, "test://watched-resource"); got != "changed once" {
				t.Errorf("read %q after the update", got)
			}

			unsub := mcp.UnsubscribeRequest{}
			unsub.Params.URI = "test://watched-resource"
			if err := c.Unsubscribe(ctxT(t), unsub); err != nil { //nolint:staticcheck // resources/subscribe, which the suite tests (before 2026-07-28)
				t.Fatal(err)
			}
			if err := srv.UpdateWatchedResource("changed twice"); err != nil {
				t.Fatalf("update: %v", err)
			}
			if got := readText(t, c, "test://watched-resource"); got != "changed twice" {
				t.Errorf("read %q after the second update", got)
			}
			time.Sleep(50 * time.Millisecond) // time for a notification that should not come
			if got := updated(); got != seen {
				t.Errorf("notified %d times, want %d: unsubscribed before the second update", got, seen)
			}
		})
	}
}

func TestUpdateWatchedResourceWithoutSubscribers(t *testing.T) {
	srv := demo.NewMCP(demo.MCPOptions{})
	if err := srv.UpdateWatchedResource("nobody listens"); err != nil {
		t.Fatal(err)
	}
	c := connect(t, srv, peers[0], &fakeUser{})
	if got := readText(t, c, "test://watched-resource"); got != "nobody listens" {
		t.Errorf("read %q", got)
	}
}

func TestTemplateRejectsBadURI(t *testing.T) {
	c := connect(t, demo.NewMCP(demo.MCPOptions{}), peers[0], &fakeUser{})
	for _, uri := range []string{"test://template//data", "test://nothing"} {
		req := mcp.ReadResourceRequest{}
		req.Params.URI = uri
		if res, err := c.ReadResource(ctxT(t), req); err == nil {
			t.Errorf("read %s: %s, want an error", uri, asJSON(t, res))
		}
	}
}
