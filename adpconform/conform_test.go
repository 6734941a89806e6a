package adpconform_test

import (
	"testing"

	"github.com/agentprotocols/go-sdk/adp/adptest"
	"github.com/agentprotocols/go-sdk/adpconform"
	"github.com/agentprotocols/go-sdk/adpconform/adpconformtest"
)

func TestMemoryStore(t *testing.T) {
	_, srv := adptest.NewServer(t, nil)
	adpconformtest.Run(t, srv.URL, &adpconformtest.Options{
		Options: adpconform.Options{AllowLoopbackHTTP: true, HTTPClient: srv.Client()},
	})
}
