package adptest_test

import "testing"

// TestWorldExample runs the test that ExampleWorld shows.
func TestWorldExample(t *testing.T) { retryDiscussion(t) }
