package collector

import (
	"errors"
	"syscall"
)

// isUnsupported reports errors a kernel gives for a file it has but will not
// serve (PSI compiled in but disabled answers EOPNOTSUPP on open).
func isUnsupported(err error) bool {
	return errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOTSUP)
}
