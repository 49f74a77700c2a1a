package a2a

// CardPath is where an agent publishes its card.
const CardPath = "/.well-known/agent-card.json"

// Protocol bindings an AgentInterface names.
const (
	BindingJSONRPC  = "JSONRPC"
	BindingGRPC     = "GRPC"
	BindingHTTPJSON = "HTTP+JSON"
)

// AgentCard describes an agent: who it is, where and how it is reached, what it can do.
type AgentCard struct {
	Name                 string                    `json:"name"`
	Description          string                    `json:"description"`
	SupportedInterfaces  []AgentInterface          `json:"supportedInterfaces"`
	Provider             *AgentProvider            `json:"provider,omitempty"`
	Version              string                    `json:"version"`
	DocumentationURL     string                    `json:"documentationUrl,omitempty"`
	Capabilities         AgentCapabilities         `json:"capabilities"`
	SecuritySchemes      map[string]SecurityScheme `json:"securitySchemes,omitempty"`
	SecurityRequirements []SecurityRequirement     `json:"securityRequirements,omitempty"`
	DefaultInputModes    []string                  `json:"defaultInputModes"`
	DefaultOutputModes   []string                  `json:"defaultOutputModes"`
	Skills               []AgentSkill              `json:"skills"`

	// The 0.3 members, beside the 1.0 ones so that a 0.3 client reads the same card: its
	// preferred endpoint, transport and protocol version, and the security list.
	URL                string                `json:"url,omitempty"`
	PreferredTransport string                `json:"preferredTransport,omitempty"`
	ProtocolVersion    string                `json:"protocolVersion,omitempty"`
	Security           []map[string][]string `json:"security,omitempty"`
	// SupportsAuthenticatedExtendedCard is 0.3's capabilities.extendedAgentCard.
	SupportsAuthenticatedExtendedCard *bool `json:"supportsAuthenticatedExtendedCard,omitempty"`
	// Signatures are JWS signatures of the rest of the card (SignCard, VerifyCard).
	Signatures []AgentCardSignature `json:"signatures,omitempty"`
}

// AgentInterface is one endpoint of the agent: its URL, binding and protocol version.
type AgentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	Tenant          string `json:"tenant,omitempty"`
	ProtocolVersion string `json:"protocolVersion"`
	Transport       string `json:"transport,omitempty"` // 0.3's name of the binding
}

// AgentProvider is the organisation behind the agent.
type AgentProvider struct {
	URL          string `json:"url"`
	Organization string `json:"organization"`
}

// AgentCapabilities are the optional features the agent supports.
type AgentCapabilities struct {
	Streaming         *bool `json:"streaming,omitempty"`
	PushNotifications *bool `json:"pushNotifications,omitempty"`
	ExtendedAgentCard *bool `json:"extendedAgentCard,omitempty"`
}

// SecurityScheme is one way to authenticate (exactly one member set). The 0.3 spelling
// (OpenAPI's: type, scheme, in, name) is carried beside it for 0.3 clients.
type SecurityScheme struct {
	APIKey   *APIKeySecurityScheme   `json:"apiKeySecurityScheme,omitempty"`
	HTTPAuth *HTTPAuthSecurityScheme `json:"httpAuthSecurityScheme,omitempty"`
	OAuth2   *OAuth2SecurityScheme   `json:"oauth2SecurityScheme,omitempty"`

	Type         string `json:"type,omitempty"`
	Scheme       string `json:"scheme,omitempty"`
	BearerFormat string `json:"bearerFormat,omitempty"`
	In           string `json:"in,omitempty"`
	Name         string `json:"name,omitempty"`
	Description  string `json:"description,omitempty"`
}

// APIKeySecurityScheme is an API key in a header, query parameter or cookie.
type APIKeySecurityScheme struct {
	Description string `json:"description,omitempty"`
	Location    string `json:"location"`
	Name        string `json:"name"`
}

// HTTPAuthSecurityScheme is an HTTP authentication scheme (RFC 9110), such as Bearer.
type HTTPAuthSecurityScheme struct {
	Description  string `json:"description,omitempty"`
	Scheme       string `json:"scheme"`
	BearerFormat string `json:"bearerFormat,omitempty"`
}

// OAuth2SecurityScheme points at the OAuth 2.0 authorization server metadata (RFC 8414).
type OAuth2SecurityScheme struct {
	Description       string         `json:"description,omitempty"`
	Flows             map[string]any `json:"flows"`
	OAuth2MetadataURL string         `json:"oauth2MetadataUrl,omitempty"`
}

// SecurityRequirement names schemes that together authenticate a request, each with the
// scopes it needs.
type SecurityRequirement struct {
	Schemes map[string]StringList `json:"schemes"`
}

// StringList is a list of strings (a proto wrapper).
type StringList struct {
	List []string `json:"list"`
}

// AgentSkill is one thing the agent can do.
type AgentSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
	InputModes  []string `json:"inputModes,omitempty"`
	OutputModes []string `json:"outputModes,omitempty"`
}
