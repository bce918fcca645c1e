"""image/firmware-prune.py: which firmware files the image keeps (the files the kernel's
drivers name, Intel's newest accepted API version, whole directories of drivers that load
files they do not name)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

SPEC = importlib.util.spec_from_file_location(
    "firmware_prune", Path(__file__).resolve().parents[2] / "image" / "firmware-prune.py")
prune = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(prune)


def test_named_files_patterns_and_intels_newest_accepted_version():
    files = ["rtl_nic/rtl8125b-2.fw", "rtl_nic/rtl8402-1.fw", "rtl_bt/rtl8761b_fw.bin",
             "iwlwifi-cc-a0-50.ucode", "iwlwifi-cc-a0-72.ucode", "iwlwifi-cc-a0-77.ucode",
             "iwlwifi-ty-a0-gf-a0.pnvm", "iwlwifi-ty-a0-gf-a0-72.ucode", "i915/adlp_dmc_ver2_16.bin",
             "mediatek/WIFI_RAM_CODE_MT7961_1.bin.xz"]
    names = {"rtl_nic/rtl8125b-2.fw", "iwlwifi-cc-a0-74.ucode", "iwlwifi-ty-a0-gf-a0-72.ucode",
             "i915/adlp_dmc_ver2_*.bin", "mediatek/WIFI_RAM_CODE_MT7961_1.bin"}
    assert prune.wanted(files, names) == {
        "rtl_nic/rtl8125b-2.fw",                  # named
        "iwlwifi-cc-a0-72.ucode",                 # the newest at or below the API the driver names (74)
        "iwlwifi-ty-a0-gf-a0-72.ucode", "iwlwifi-ty-a0-gf-a0.pnvm",
        "i915/adlp_dmc_ver2_16.bin",              # a pattern
        "mediatek/WIFI_RAM_CODE_MT7961_1.bin.xz"}  # the kernel loads NAME.xz too


def test_drivers_that_ask_for_unnamed_files_keep_their_pcie_chips():
    files = ["ath10k/QCA9984/hw1.0/firmware-5.bin", "ath10k/QCA9984/hw1.0/board-2.bin",
             "ath11k/QCN9074/hw1.0/amss.bin", "ath11k/WCN6855/hw2.0/m3.bin",
             "ath11k/IPQ8074/hw2.0/q6_fw.b00", "ath11k/WCN6750/hw1.0/wpss.mdt", "ar3k/AthrBT_0x01020001.dfu"]
    assert prune.wanted(files, set()) == {
        "ath10k/QCA9984/hw1.0/firmware-5.bin", "ath10k/QCA9984/hw1.0/board-2.bin",
        "ath11k/QCN9074/hw1.0/amss.bin", "ath11k/WCN6855/hw2.0/m3.bin"}


def test_chips_a_router_cannot_use_lose_their_firmware_even_when_named():
    files = ["iwlwifi-6000g2a-6.ucode", "iwlwifi-1000-5.ucode", "iwlwifi-7265D-29.ucode",
             "wil6210.fw", "cxgb4/t6fw.bin", "qat_c62x.bin", "ueagle-atm/eagleI.fw"]
    assert prune.wanted(files, set(files)) == {"iwlwifi-7265D-29.ucode"}   # 7265: iwlmvm, an access point
