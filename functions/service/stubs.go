package service

import (
	"context"

	"github.com/sluicehq/sluice/contract"
)

func (s *Service) AddPermission(ctx context.Context, in *contract.AddPermissionInput) (*contract.Empty, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) CancelMessageMoveTask(ctx context.Context, in *contract.CancelMessageMoveTaskInput) (*contract.CancelMessageMoveTaskOutput, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) ChangeMessageVisibility(ctx context.Context, in *contract.ChangeMessageVisibilityInput) (*contract.Empty, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) ChangeMessageVisibilityBatch(ctx context.Context, in *contract.ChangeMessageVisibilityBatchInput) (*contract.ChangeMessageVisibilityBatchOutput, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) CreateQueue(ctx context.Context, in *contract.CreateQueueInput) (*contract.CreateQueueOutput, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) DeleteMessage(ctx context.Context, in *contract.DeleteMessageInput) (*contract.Empty, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) DeleteMessageBatch(ctx context.Context, in *contract.DeleteMessageBatchInput) (*contract.DeleteMessageBatchOutput, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) DeleteQueue(ctx context.Context, in *contract.DeleteQueueInput) (*contract.Empty, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) GetQueueAttributes(ctx context.Context, in *contract.GetQueueAttributesInput) (*contract.GetQueueAttributesOutput, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) GetQueueUrl(ctx context.Context, in *contract.GetQueueUrlInput) (*contract.GetQueueUrlOutput, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) ListDeadLetterSourceQueues(ctx context.Context, in *contract.ListDeadLetterSourceQueuesInput) (*contract.ListDeadLetterSourceQueuesOutput, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) ListMessageMoveTasks(ctx context.Context, in *contract.ListMessageMoveTasksInput) (*contract.ListMessageMoveTasksOutput, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) ListQueueTags(ctx context.Context, in *contract.ListQueueTagsInput) (*contract.ListQueueTagsOutput, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) ListQueues(ctx context.Context, in *contract.ListQueuesInput) (*contract.ListQueuesOutput, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) PurgeQueue(ctx context.Context, in *contract.PurgeQueueInput) (*contract.Empty, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) ReceiveMessage(ctx context.Context, in *contract.ReceiveMessageInput) (*contract.ReceiveMessageOutput, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) RemovePermission(ctx context.Context, in *contract.RemovePermissionInput) (*contract.Empty, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) SendMessage(ctx context.Context, in *contract.SendMessageInput) (*contract.SendMessageOutput, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) SendMessageBatch(ctx context.Context, in *contract.SendMessageBatchInput) (*contract.SendMessageBatchOutput, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) SetQueueAttributes(ctx context.Context, in *contract.SetQueueAttributesInput) (*contract.Empty, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) StartMessageMoveTask(ctx context.Context, in *contract.StartMessageMoveTaskInput) (*contract.StartMessageMoveTaskOutput, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) TagQueue(ctx context.Context, in *contract.TagQueueInput) (*contract.Empty, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}

func (s *Service) UntagQueue(ctx context.Context, in *contract.UntagQueueInput) (*contract.Empty, error) {
	return nil, contract.ErrUnsupportedOperation("not implemented yet")
}
