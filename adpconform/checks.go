package adpconform

// checks is the suite, in report order; each file of the package appends
// its checks in an init function, in file-name order.
var checks []Check
