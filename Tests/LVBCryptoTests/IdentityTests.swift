import Foundation
import LVBCore
import TestAssertions
import Testing
@testable import LVBCrypto

/// A fresh directory under /tmp with a random name, removed by `cleanUp`.
struct TempHome {
    let root = "/tmp/lvbcrypto-test-" + Hex.encode(SodiumRandom.shared.bytes(8))
    var home: String { root + "/node" }
    var keyPath: String { home + "/identity.key" }
    func cleanUp() { try? FileManager.default.removeItem(atPath: root) }
}

func fileMode(_ path: String) -> UInt32? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return UInt32(info.st_mode) & 0o7777
}


@Suite struct IdentityTests {
    @Test func signaturesVerifyOnlyForTheSignedMessageAndSigner() throws {
        let alice = Identity.generate(), bob = Identity.generate()
        let message = Array("like #1 in room 42".utf8)
        let signature = alice.sign(message)
        #expect(signature.count == 64)
        #expect(Identity.verify(signature: signature, message: message, by: alice.nodeID))
        #expect(!Identity.verify(signature: signature, message: message + [0], by: alice.nodeID))
        var tampered = message
        tampered[0] ^= 1
        #expect(!Identity.verify(signature: signature, message: tampered, by: alice.nodeID))
        #expect(!Identity.verify(signature: signature, message: message, by: bob.nodeID))
        #expect(!Identity.verify(signature: Array(signature.prefix(63)), message: message, by: alice.nodeID))
    }

    @Test func seedRoundTripsToTheSameIdentity() throws {
        let a = Identity.generate()
        let b = try Identity(seed: a.seed)
        #expect(a.nodeID == b.nodeID && a.seed.count == 32)
        expectError(.badKeyLength, { () throws(IdentityError) in try Identity(seed: [1, 2]) })
        #expect(!"\(a)".contains(Base32.encode(a.seed)))
    }

    @Test func nodeIDTextRoundTrips() throws {
        let id = Identity.generate().nodeID
        #expect(id.text.count == 52 && id.short == String(id.text.prefix(8)) && id.description == id.text)
        #expect(try NodeID(text: id.text) == id)
        #expect(try NodeID(text: id.text.uppercased()) == id)
        for bad in ["", "abc", String(id.text.dropLast()), id.text + "a", String(id.text.dropLast()) + "1"] {
            expectError(.badText(bad), { () throws(IdentityError) in try NodeID(text: bad) })
        }
        expectError(.badKeyLength, { () throws(IdentityError) in try NodeID(publicKey: [UInt8](repeating: 1, count: 31)) })
    }

    @Test func noiseStaticKeyIsBoundToTheNodeID() throws {
        let identity = Identity.generate()
        #expect(identity.noiseStatic.publicKey == identity.nodeID.noiseStaticKey)
        #expect(identity.noiseStatic.publicKey.count == 32)
        #expect(try NodeID(publicKey: identity.nodeID.publicKey).noiseStaticKey == identity.nodeID.noiseStaticKey)
    }

    @Test func defaultHomePrefersLVBNODE_HOME() {
        #expect(IdentityStore.defaultHome(environment: ["LVBNODE_HOME": "/srv/n", "HOME": "/home/u"]) == "/srv/n")
        #expect(IdentityStore.defaultHome(environment: ["HOME": "/home/u"]) == "/home/u/.lvbnode")
    }

    @Test func storeCreatesAPrivateKeyFileAndReloadsIt() throws {
        let t = TempHome()
        defer { t.cleanUp() }
        let (created, isNew) = try IdentityStore.loadOrCreate(home: t.home)
        #expect(isNew)
        #expect(fileMode(t.keyPath) == 0o600)
        #expect(fileMode(t.home) == 0o700)
        let text = try String(contentsOfFile: t.keyPath, encoding: .utf8)
        #expect(text == "lvbnode-identity-v1 \(Base32.encode(created.seed))\n")
        let (loaded, isNewAgain) = try IdentityStore.loadOrCreate(home: t.home)
        #expect(!isNewAgain && loaded.nodeID == created.nodeID)
    }

    @Test func storeRefusesAKeyFileOthersCanRead() throws {
        let t = TempHome()
        defer { t.cleanUp() }
        _ = try IdentityStore.loadOrCreate(home: t.home)
        #expect(chmod(t.keyPath, 0o644) == 0)
        expectError(.insecurePermissions(path: t.keyPath, mode: 0o644), { () throws(IdentityError) in
            try IdentityStore.loadOrCreate(home: t.home)
        })
        #expect(IdentityError.insecurePermissions(path: t.keyPath, mode: 0o644).description.contains("chmod 600 \(t.keyPath)"))
    }

    @Test func storeNeverReplacesACorruptKeyFile() throws {
        let t = TempHome()
        defer { t.cleanUp() }
        #expect(mkdir(t.root, 0o700) == 0 && mkdir(t.home, 0o700) == 0)
        let garbage = "lvbnode-identity-v1 not-base32!\n"
        let fd = open(t.keyPath, O_CREAT | O_EXCL | O_WRONLY, 0o600)
        #expect(fd >= 0)
        _ = garbage.withCString { write(fd, $0, strlen($0)) }
        close(fd)
        expectError(.corruptKeyFile(path: t.keyPath), { () throws(IdentityError) in
            try IdentityStore.loadOrCreate(home: t.home)
        })
        #expect(try String(contentsOfFile: t.keyPath, encoding: .utf8) == garbage)
        #expect(IdentityError.corruptKeyFile(path: t.keyPath).description.contains("NOT be replaced"))
    }
}
