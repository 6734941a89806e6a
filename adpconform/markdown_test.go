package adpconform

import (
	"strings"
	"testing"
)

// TestActiveMarkup: the Markdown safety scan flags planted markup a
// renderer would act on, and nothing inside code or escaped.
func TestActiveMarkup(t *testing.T) {
	for md, want := range map[string]string{
		"# Room\n\n<script>alert(1)</script>\n":            "<script",
		"text <IMG src=x onerror=alert(1)>\n":              "<img",
		"[click](javascript:alert(1))\n":                   "](javascript:",
		"```text\n<script>alert(1)</script>\n```\n":        "",
		"````\n```\n<script>\n```\n````\n":                 "",
		"~~~\n<iframe>\n~~~\n":                             "",
		"inline `<script>` span\n":                         "",
		"\\<script\\> and \\[click\\]\\(javascript:x\\)\n": "",
		"    <script> indented code\n":                     "",
		"```\nunclosed fence <script>\n":                   "",
		"after `code` then <script>\n":                     "<script",
	} {
		if got := activeMarkup(md); got != want {
			t.Errorf("activeMarkup(%q) = %q, want %q", md, got, want)
		}
	}
}

// FuzzActiveMarkup: the scan of a host's Markdown never panics and flags
// any line that carries raw <script outside every code construct.
func FuzzActiveMarkup(f *testing.F) {
	for _, s := range []string{"```\n<script>\n```\n", "`a` <script>", "\\<script>", "~~~~\n~~~\n<img>\n", "````` x", "[a](javascript:b)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		got := activeMarkup(md)
		if got == "" && strings.HasPrefix(md, "<script") && !strings.Contains(md, "\n") {
			t.Fatalf("activeMarkup(%q) missed a leading raw <script", md)
		}
	})
}
