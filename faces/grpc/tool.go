package grpcface

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/observability"
	"github.com/gatehouse-dev/gatehouse/routing/mcpbackend"
	"github.com/gatehouse-dev/gatehouse/schemas"
	commonv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/common/v1"
	toolv1 "github.com/gatehouse-dev/gatehouse/schemas/gen/tool/v1"
)

// toolService is tool.v1.ToolService on the internal listener: gRPC callers invoke the
// bridged MCP tools (ToolInvocationRequest → tools/call → ToolInvocationResponse) through
// the same pipeline as JSON-RPC callers.
type toolService struct {
	toolv1.UnimplementedToolServiceServer
	gw Gateway
}

// ToolInvocation implements tool.v1.ToolService/ToolInvocation. A tool that ran and failed
// is a response with status ERROR (or TIMEOUT); a call that could not be made at all (no
// such tool, upstream down, bad input) is a gRPC status from the error table.
func (ts *toolService) ToolInvocation(ctx context.Context, req *toolv1.ToolInvocationRequest) (*toolv1.ToolInvocationResponse, error) {
	target, release := ts.mcpTarget()
	defer release()
	if target == nil {
		return nil, toStatus(gateway.Errorf(schemas.CodeMethodNotFound, "No MCP servers are configured"), observability.TraceIDOf(ctx))
	}
	args := []byte("{}")
	if req.GetInputParams() != nil {
		var err error
		if args, err = protojson.Marshal(req.GetInputParams()); err != nil {
			return nil, toStatus(gateway.NewError(schemas.CodeInvalidParams).Wrap(err), observability.TraceIDOf(ctx))
		}
	}
	if dl := req.GetDeadline(); dl != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.AsTime())
		defer cancel()
	}
	began := time.Now()
	out := runInternal(ctx, ts.gw, target.Namespace()+req.GetToolName(), args, nil)
	resp := &toolv1.ToolInvocationResponse{
		InvocationId: req.GetInvocationId(),
		Usage:        &commonv1.ResourceUsage{WallTime: durationpb.New(time.Since(began)), ToolCalls: 1},
	}
	result := out.Result
	switch {
	case out.Err == nil:
		resp.Status = toolv1.ToolResultStatus_TOOL_RESULT_STATUS_SUCCESS
	case out.Err.Code() == schemas.CodeToolFailed:
		resp.Status = toolv1.ToolResultStatus_TOOL_RESULT_STATUS_ERROR
		resp.ErrorCode = uint32(schemas.CodeToolFailed)
		result, _ = json.Marshal(out.Err.Data()["result"])
	case out.Err.Code() == schemas.CodeDeadlineExceeded:
		resp.Status = toolv1.ToolResultStatus_TOOL_RESULT_STATUS_TIMEOUT
		resp.ErrorMessage = out.Err.Message()
		return resp, nil
	default:
		return nil, toStatus(out.Err, out.TraceID)
	}
	if err := fillToolResult(resp, result); err != nil {
		return nil, toStatus(gateway.NewError(schemas.CodeInternal).Wrap(err), out.TraceID)
	}
	resp.Provenance = ts.provenance(target, req.GetToolName(), result)
	return resp, nil
}

// ListTools implements tool.v1.ToolService/ListTools: the available bridged tools,
// optionally those whose names start with name_prefix.
func (ts *toolService) ListTools(_ context.Context, req *toolv1.ListToolsRequest) (*toolv1.ListToolsResponse, error) {
	target, release := ts.mcpTarget()
	defer release()
	if target == nil {
		return &toolv1.ListToolsResponse{}, nil
	}
	out := &toolv1.ListToolsResponse{}
	for _, e := range target.Catalog().Tools {
		if !e.Available || !strings.HasPrefix(e.Name, req.GetNamePrefix()) {
			continue
		}
		var def struct {
			Description  string          `json:"description"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		}
		_ = json.Unmarshal(e.Definition, &def)
		d := &toolv1.ToolDescriptor{Name: e.Name, Version: e.Version, Description: def.Description,
			Annotations: map[string]string{"upstream": e.Upstream}}
		d.InputSchema, _ = toStruct(def.InputSchema)
		d.OutputSchema, _ = toStruct(def.OutputSchema)
		out.Tools = append(out.Tools, d)
	}
	return out, nil
}

// mcpTarget finds the bridge's target in the current configuration, which the caller
// holds until it calls release: a reload cannot retire the target (and its catalog) while
// a call still reads it.
func (ts *toolService) mcpTarget() (target *mcpbackend.Target, release func()) {
	rt := ts.gw.Acquire()
	return rt.Table().MCP(), rt.Release
}

func (ts *toolService) provenance(target *mcpbackend.Target, tool string, result []byte) *commonv1.ProvenanceRecord {
	upstream := ""
	for _, e := range target.Catalog().Tools {
		if e.Name == tool {
			upstream = e.Upstream
			tool = e.UpstreamName
			break
		}
	}
	sum := sha256.Sum256(result)
	return &commonv1.ProvenanceRecord{SourceUri: "mcp://" + upstream + "/tools/" + tool, Producer: upstream,
		ProducedAt: timestamppb.Now(), ContentSha256: sum[:]}
}

// fillToolResult maps an MCP CallToolResult onto the response: structuredContent becomes
// output, each content item a content block.
func fillToolResult(resp *toolv1.ToolInvocationResponse, result []byte) error {
	var r struct {
		Content []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			Data     string `json:"data"`
			MimeType string `json:"mimeType"`
			URI      string `json:"uri"`
			Name     string `json:"name"`
			Size     uint64 `json:"size"`
			Resource struct {
				URI      string `json:"uri"`
				MimeType string `json:"mimeType"`
				Text     string `json:"text"`
				Blob     string `json:"blob"`
			} `json:"resource"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return err
	}
	for _, c := range r.Content {
		var b *toolv1.ContentBlock
		switch c.Type {
		case "text":
			b = &toolv1.ContentBlock{Kind: &toolv1.ContentBlock_Text{Text: c.Text}}
			if resp.Status != toolv1.ToolResultStatus_TOOL_RESULT_STATUS_SUCCESS && resp.ErrorMessage == "" {
				resp.ErrorMessage = c.Text
			}
		case "image", "audio":
			data, err := base64.StdEncoding.DecodeString(c.Data)
			if err != nil {
				return err
			}
			b = &toolv1.ContentBlock{Kind: &toolv1.ContentBlock_Blob{Blob: &toolv1.Blob{MimeType: c.MimeType, Data: data}}}
		case "resource_link":
			b = &toolv1.ContentBlock{Kind: &toolv1.ContentBlock_ResourceLink{ResourceLink: &toolv1.ResourceLink{
				Uri: c.URI, Name: c.Name, MimeType: c.MimeType, SizeBytes: c.Size}}}
		case "resource":
			b = embeddedResource(c.Resource.URI, c.Resource.MimeType, c.Resource.Text, c.Resource.Blob)
		default:
			continue // a content type this contract has no block for
		}
		resp.Content = append(resp.Content, b)
	}
	if len(r.StructuredContent) > 0 {
		var err error
		if resp.Output, err = toStruct(r.StructuredContent); err != nil {
			return err
		}
	}
	return nil
}

// embeddedResource maps an embedded resource: its blob as a Blob, its text as text.
func embeddedResource(uri, mime, text, blob string) *toolv1.ContentBlock {
	if blob != "" {
		if data, err := base64.StdEncoding.DecodeString(blob); err == nil {
			return &toolv1.ContentBlock{Kind: &toolv1.ContentBlock_Blob{Blob: &toolv1.Blob{MimeType: mime, Data: data}}}
		}
	}
	if text != "" {
		return &toolv1.ContentBlock{Kind: &toolv1.ContentBlock_Text{Text: text}}
	}
	return &toolv1.ContentBlock{Kind: &toolv1.ContentBlock_ResourceLink{ResourceLink: &toolv1.ResourceLink{Uri: uri, MimeType: mime}}}
}

// toStruct converts a JSON object to a Struct; nil or empty input gives nil.
func toStruct(raw json.RawMessage) (*structpb.Struct, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	s := &structpb.Struct{}
	if err := protojson.Unmarshal(raw, s); err != nil {
		return nil, err
	}
	return s, nil
}
