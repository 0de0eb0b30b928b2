// Test access to the write path's failure point.

package hook

// FailBeforeReplace makes Write fail just before it replaces the file at path (nil: never).
func FailBeforeReplace(fail func(path string) error) { beforeReplace = fail }
