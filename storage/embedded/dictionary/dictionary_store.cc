#include "storage/embedded/dictionary/dictionary_store.h"

namespace warpscope::dictionary {

StatusOr<std::unique_ptr<DictionaryStore>> DictionaryStore::Open(const std::string& path, const BatchLimits& limits,
                                                                 const OpenOptions& options) {
  // The writer first: it creates or checks the schema the reader prepares against.
  ASSIGN_OR_RETURN(std::unique_ptr<DictionaryWriter> writer, DictionaryWriter::Open(path, limits, options.create));
  ASSIGN_OR_RETURN(std::unique_ptr<SegmentManifest> manifest, SegmentManifest::Open(writer->db()));
  ASSIGN_OR_RETURN(std::unique_ptr<DictionaryReader> reader, DictionaryReader::Open(path));
  return std::unique_ptr<DictionaryStore>(
      new DictionaryStore(std::move(writer), std::move(manifest), std::move(reader)));
}

StatusOr<InternedBatch> DictionaryStore::InternBatch(const warpscope::v1::IngestBatch& batch,
                                                     const InternOptions& options) {
  std::lock_guard<std::mutex> lock(write_mu_);
  return writer_->InternBatch(batch, options.record_sequence);
}

Status DictionaryStore::RecordAgentSequences(const std::vector<std::pair<std::string, uint64_t>>& sequences) {
  std::lock_guard<std::mutex> lock(write_mu_);
  return writer_->RecordAgentSequences(sequences);
}

std::vector<std::pair<std::string, uint64_t>> DictionaryStore::AgentSequences() {
  std::lock_guard<std::mutex> lock(write_mu_);
  return writer_->AgentSequences();
}

DictionaryMarks DictionaryStore::Marks() {
  std::lock_guard<std::mutex> lock(write_mu_);
  return writer_->Marks();
}

StatusOr<std::vector<ManifestEntry>> DictionaryStore::ManifestEntries() {
  std::lock_guard<std::mutex> lock(write_mu_);
  return manifest_->Entries();
}

StatusOr<std::vector<RecordedGap>> DictionaryStore::RecordedGaps() {
  std::lock_guard<std::mutex> lock(write_mu_);
  return manifest_->Gaps();
}

Status DictionaryStore::UpdateManifest(const ManifestChange& change) {
  std::lock_guard<std::mutex> lock(write_mu_);
  return manifest_->Apply(change);
}

StatusOr<bool> DictionaryStore::SeenBefore(const std::string& agent_id, uint64_t sequence) {
  std::lock_guard<std::mutex> lock(write_mu_);
  return writer_->SeenBefore(agent_id, sequence);
}

StatusOr<ResolvedStack> DictionaryStore::ResolveStack(uint64_t stack_id) {
  ASSIGN_OR_RETURN(std::vector<ResolvedStack> stacks, ResolveStacks({stack_id}));
  return std::move(stacks.front());
}

StatusOr<std::vector<ResolvedStack>> DictionaryStore::ResolveStacks(const std::vector<uint64_t>& stack_ids) {
  std::lock_guard<std::mutex> lock(read_mu_);
  return reader_->ResolveStacks(stack_ids);
}

StatusOr<std::vector<std::vector<uint64_t>>> DictionaryStore::StackLocations(const std::vector<uint64_t>& stack_ids) {
  std::lock_guard<std::mutex> lock(read_mu_);
  return reader_->StackLocations(stack_ids);
}

StatusOr<std::vector<std::vector<ResolvedFrame>>> DictionaryStore::ResolveLocations(
    const std::vector<uint64_t>& location_ids) {
  std::lock_guard<std::mutex> lock(read_mu_);
  return reader_->ResolveLocations(location_ids);
}

StatusOr<std::vector<std::string>> DictionaryStore::Strings(const std::vector<uint64_t>& ids) {
  std::lock_guard<std::mutex> lock(read_mu_);
  return reader_->Strings(ids);
}

StatusOr<Labels> DictionaryStore::LabelSet(uint64_t label_set_id) {
  std::lock_guard<std::mutex> lock(read_mu_);
  return reader_->LabelSet(label_set_id);
}

StatusOr<ProfileTypeInfo> DictionaryStore::ProfileType(uint64_t type_id) {
  std::lock_guard<std::mutex> lock(read_mu_);
  return reader_->ProfileType(type_id);
}

StatusOr<std::vector<uint64_t>> DictionaryStore::SeriesMatching(const Labels& equal_matchers) {
  std::lock_guard<std::mutex> lock(read_mu_);
  return reader_->SeriesMatching(equal_matchers);
}

StatusOr<std::vector<std::string>> DictionaryStore::LabelNames() {
  std::lock_guard<std::mutex> lock(read_mu_);
  return reader_->LabelNames();
}

StatusOr<std::vector<std::string>> DictionaryStore::LabelValues(const std::string& name) {
  std::lock_guard<std::mutex> lock(read_mu_);
  return reader_->LabelValues(name);
}

StatusOr<DictionaryRowCounts> DictionaryStore::RowCounts() {
  std::lock_guard<std::mutex> lock(read_mu_);
  return reader_->RowCounts();
}

}  // namespace warpscope::dictionary
