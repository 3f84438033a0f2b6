package mcpserver

import (
	"context"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/walkie-sh/walkie/walkie"
)

// The records are resources: file:// URIs of the walkie files, their
// markdown as it is on disk (verified or not: the reader sees what is
// there). The debates found at start are listed; any other walkie file is
// read by its URI through the template.
const recordTemplate = "file:///{+path}"

func (s *server) addResources() error {
	files, err := s.debates(s.o.Dir)
	if err != nil {
		return err
	}
	for _, f := range files {
		s.addRecord(f)
	}
	s.srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "walkie record", URITemplate: recordTemplate, MIMEType: "text/markdown",
		Description: "a debate's record (NAME.walkie.md): its briefing and every entry, as walkie keeps it"}, s.readRecord)
	return nil
}

// addRecord lists file's record as a resource.
func (s *server) addRecord(file string) {
	s.srv.AddResource(&mcp.Resource{Name: filepath.Base(file), URI: recordURI(file), MIMEType: "text/markdown",
		Description: "the record of the debate " + strings.TrimSuffix(filepath.Base(file), walkie.FileSuffix)}, s.readRecord)
}

func recordURI(file string) string { return (&url.URL{Scheme: "file", Path: file}).String() }

// readRecord reads the record a resource's URI names: a walkie file, and
// nothing else (a URI of another file is not found).
func (s *server) readRecord(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || !strings.HasSuffix(u.Path, walkie.FileSuffix) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	file, err := walkie.Resolve(filepath.Clean(u.Path))
	if err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	d, err := walkie.Load(file)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: string(d.Render())}}}, nil
}
