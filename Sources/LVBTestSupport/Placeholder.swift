import LVBCore
