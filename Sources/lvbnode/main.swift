import LVBCrypto
print(SodiumRandom.shared.bytes(4))
