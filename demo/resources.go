package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// addResources registers the static resources, the watched resource and the template.
func (s *MCP) addResources() {
	s.mcp.AddResource(
		mcp.NewResource(staticTextURI, "static-text",
			mcp.WithResourceTitle("Static Text Resource"),
			mcp.WithResourceDescription("A static text resource for testing"),
			mcp.WithMIMEType(mimeText)),
		textResource(staticTextURI, staticText))
	s.mcp.AddResource(
		mcp.NewResource(staticBinaryURI, "static-binary",
			mcp.WithResourceTitle("Static Binary Resource"),
			mcp.WithResourceDescription("A static binary resource (a 1x1 PNG) for testing"),
			mcp.WithMIMEType(mimePNG)),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.BlobResourceContents{URI: staticBinaryURI, MIMEType: mimePNG, Blob: pngBase64}}, nil
		})
	s.mcp.AddResource(
		mcp.NewResource(watchedURI, "watched-resource",
			mcp.WithResourceTitle("Watched Resource"),
			mcp.WithResourceDescription("A resource whose subscribers are notified by UpdateWatchedResource"),
			mcp.WithMIMEType(mimeText)),
		s.watched.read)
	s.mcp.AddResourceTemplate(
		mcp.NewResourceTemplate(templateURI, "template",
			mcp.WithTemplateDescription("A resource template with parameter substitution"),
			mcp.WithTemplateMIMEType(mimeJSON)),
		templateData)
}

// textResource reads as text.
func textResource(uri, text string) server.ResourceHandlerFunc {
	return func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: mimeText, Text: text}}, nil
	}
}

// templateData reads test://template/{id}/data: {"id":…,"templateTest":true,"data":"Data for ID: …"}.
func templateData(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	var id string
	switch v := req.Params.Arguments["id"].(type) {
	case string:
		id = v
	case []string:
		if len(v) == 1 {
			id = v[0]
		}
	}
	if id == "" {
		return nil, fmt.Errorf("%s: no id in %q", templateURI, req.Params.URI)
	}
	text, err := json.Marshal(struct {
		ID           string `json:"id"`
		TemplateTest bool   `json:"templateTest"`
		Data         string `json:"data"`
	}{id, true, "Data for ID: " + id})
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", req.Params.URI, err)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: mimeJSON, Text: string(text)}}, nil
}

// UpdateWatchedResource replaces the text of test://watched-resource and sends
// notifications/resources/updated to every session subscribed to it; the error joins the
// sessions that could not be notified. Over streamable HTTP the notification travels on
// the session's GET stream or, while it has none, on the session's next request.
func (s *MCP) UpdateWatchedResource(text string) error {
	var errs []error
	for _, sessionID := range s.watched.update(text) {
		err := s.mcp.SendNotificationToSpecificClient(sessionID, string(mcp.MethodNotificationResourceUpdated),
			map[string]any{"uri": watchedURI})
		if err != nil {
			errs = append(errs, fmt.Errorf("session %s: %w", sessionID, err))
		}
	}
	return errors.Join(errs...)
}

// watchedResource is the text of test://watched-resource and the sessions subscribed to it.
type watchedResource struct {
	mu          sync.Mutex
	text        string
	subscribers map[string]bool
}

func newWatchedResource() *watchedResource {
	return &watchedResource{text: watchedInitial, subscribers: make(map[string]bool)}
}

// hook records subscriptions to the watched resource, and forgets a session's when it ends.
func (w *watchedResource) hook(hooks *server.Hooks) {
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		w.subscribe(ctx, req.Params.URI, true)
	})
	hooks.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		w.subscribe(ctx, req.Params.URI, false)
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, session server.ClientSession) {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.subscribers, session.SessionID())
	})
}

func (w *watchedResource) subscribe(ctx context.Context, uri string, on bool) {
	session := server.ClientSessionFromContext(ctx)
	if uri != watchedURI || session == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if on {
		w.subscribers[session.SessionID()] = true
	} else {
		delete(w.subscribers, session.SessionID())
	}
}

func (w *watchedResource) read(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: watchedURI, MIMEType: mimeText, Text: w.text}}, nil
}

// update sets the text and returns the subscribed sessions.
func (w *watchedResource) update(text string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.text = text
	sessions := make([]string, 0, len(w.subscribers))
	for id := range w.subscribers {
		sessions = append(sessions, id)
	}
	return sessions
}
