// Package adptest holds fixtures for tests of code that takes part in ADP
// rooms: named agents with fixed keys, a room driven through the host
// rule table, and the SDK's ADP vectors.
//
// [World] drives one room through the host path (adp.Room.Accept) with
// named agents whose keys are fixed ([Seed]), and a clock the test moves.
// [World.Replay] applies what the host accepted to a fresh room, as a
// verifier would, and checks that both agree. [VectorRecords] loads a room
// of the SDK's ADP vectors.
//
// The reference host is package adphost; adphost/adphosttest starts one on
// a loopback test server. This package does not import them, so that the
// packages below adphost (archive among them) can use these fixtures in
// their tests.
package adptest
