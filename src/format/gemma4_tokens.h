// The Gemma 4 control tokens: their text (the vocabulary piece) and, where the spec pins it,
// their id (shared/spec/gemma4-text.md §4.2). The one place in gemlet that spells them; code
// that writes or matches a control token uses these names. Text is what the chat template
// writes and the tokenizer matches (special tokens written as text are matched); ids are what
// the model generates. Code that has a tokenizer should look a piece up (PieceToId) rather
// than trust the id: a converted or synthetic vocabulary may place a token elsewhere.
#pragma once

#include <cstdint>
#include <string_view>

namespace gemlet::gemma4 {

// Sequence tokens.
inline constexpr std::string_view kPad = "<pad>";    // id 0
inline constexpr std::string_view kEos = "<eos>";    // id 1
inline constexpr std::string_view kBos = "<bos>";    // id 2
inline constexpr std::string_view kUnk = "<unk>";    // id 3
inline constexpr std::string_view kMask = "<mask>";  // id 4 (unverified, spec §4.2)

// Turns: "<|turn>ROLE\n ... <turn|>\n". The end of a turn is a stop token.
inline constexpr std::string_view kTurnOpen = "<|turn>";    // id 105
inline constexpr std::string_view kTurnClose = "<turn|>";   // id 106
// Thinking: kThink in the system turn turns it on; the model then writes its thoughts in a
// channel "<|channel>thought\n ... <channel|>".
inline constexpr std::string_view kThink = "<|think|>";         // id 98
inline constexpr std::string_view kChannelOpen = "<|channel>";  // id 100
inline constexpr std::string_view kChannelClose = "<channel|>"; // id 101
// The channel name and its newline that follow kChannelOpen for the thought channel.
inline constexpr std::string_view kThoughtHeader = "thought\n";

// Tools: declarations in the system turn, calls by the model, responses by the caller.
inline constexpr std::string_view kToolOpen = "<|tool>";                  // id 46
inline constexpr std::string_view kToolClose = "<tool|>";                 // id 47
inline constexpr std::string_view kToolCallOpen = "<|tool_call>";         // id 48
inline constexpr std::string_view kToolCallClose = "<tool_call|>";        // id 49
inline constexpr std::string_view kToolResponseOpen = "<|tool_response>"; // id 50 (a stop token)
inline constexpr std::string_view kToolResponseClose = "<tool_response|>";// id 51
// The string delimiter inside tool syntax: <|"|>text<|"|>.
inline constexpr std::string_view kQuote = "<|\"|>";  // id 52
// What a call's body starts with: "<|tool_call>call:NAME{key:value,...}<tool_call|>".
inline constexpr std::string_view kCallPrefix = "call:";
inline constexpr std::string_view kResponsePrefix = "response:";
inline constexpr std::string_view kDeclarationPrefix = "declaration:";

// Multimodal boundaries and placeholders.
inline constexpr std::string_view kImageOpen = "<|image>";   // id 255999 (boi)
inline constexpr std::string_view kAudioOpen = "<|audio>";   // id 256000 (boa)
inline constexpr std::string_view kImage = "<|image|>";      // id 258880
inline constexpr std::string_view kAudio = "<|audio|>";      // id 258881
inline constexpr std::string_view kImageClose = "<image|>";  // id 258882
inline constexpr std::string_view kAudioClose = "<audio|>";  // id 258883
inline constexpr std::string_view kVideo = "<|video|>";      // id 258884

// The ids of the real Gemma 4 vocabulary (spec §4.2).
inline constexpr int32_t kPadId = 0;
inline constexpr int32_t kEosId = 1;
inline constexpr int32_t kBosId = 2;
inline constexpr int32_t kUnkId = 3;
inline constexpr int32_t kMaskId = 4;
inline constexpr int32_t kToolOpenId = 46;
inline constexpr int32_t kToolCloseId = 47;
inline constexpr int32_t kToolCallOpenId = 48;
inline constexpr int32_t kToolCallCloseId = 49;
inline constexpr int32_t kToolResponseOpenId = 50;
inline constexpr int32_t kToolResponseCloseId = 51;
inline constexpr int32_t kQuoteId = 52;
inline constexpr int32_t kThinkId = 98;
inline constexpr int32_t kChannelOpenId = 100;
inline constexpr int32_t kChannelCloseId = 101;
inline constexpr int32_t kTurnOpenId = 105;
inline constexpr int32_t kTurnCloseId = 106;
inline constexpr int32_t kImageOpenId = 255999;
inline constexpr int32_t kAudioOpenId = 256000;
inline constexpr int32_t kImageId = 258880;
inline constexpr int32_t kAudioId = 258881;
inline constexpr int32_t kImageCloseId = 258882;
inline constexpr int32_t kAudioCloseId = 258883;
inline constexpr int32_t kVideoId = 258884;

}  // namespace gemlet::gemma4
