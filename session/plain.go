package session

// PlainText turns raw terminal output into plain text as it streams in,
// for callers that show or search what an agent prints (a progress line,
// say) without keeping it: escape sequences are removed and "\r" reads as
// a line break. Its zero value is ready; its memory is constant.
type PlainText struct {
	s stripper
}

// Append appends the plain-text form of raw to dst.
func (p *PlainText) Append(dst, raw []byte) []byte {
	n := len(dst)
	dst = p.s.strip(dst, raw)
	for i := n; i < len(dst); i++ {
		if dst[i] == '\r' {
			dst[i] = '\n'
		}
	}
	return dst
}
